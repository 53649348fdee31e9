"""Review over HTTP, with the same rules as the page: approve (with edits)
and reject a job awaiting review; the page's grid reads items and source rows
in pages and saves or previews its edits through the same body.

Authorization is the page's: a job of another workspace is a 404 like an
unknown id; a member without the reviewer role gets 403.
"""

import math
import uuid
from typing import Annotated, Literal

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from ninja import Router, Schema
from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from accounts.auth import authenticate
from catalog.flags import CODES
from jobs.http import (
    BoundedJsonParser,
    JobVersion,
    JsonBool,
    Open,
    Version,
    answers,
    caller,
    json_int,
    validation_problem,
)
from jobs.models import Job
from jobs.problems import Problem, api_view, not_found, register_titles
from review.parsing import MSG_NOT_A_CODE, BadEdits, edits_from_json, filter_from_json, version_from_json
from review.selectors import (
    EDITABLE_FIELDS,
    NotAReviewer,
    index_ranges,
    review_grid_state,
    review_item_page_json,
    review_matching_indexes,
    review_job_get,
    review_source_rows,
)
from review.decisions import ApprovalBlocked, ReasonRequired, ReviewStale, SourceTableMissing
from review.edits import SCOPES, EditRejected, value_check
from review.services import (
    review_approve,
    review_preview,
    review_reject,
    review_save_edits,
    review_snapshot_current,
)

register_titles(
    {
        "approval-blocked": "Flags still block approval",
        "invalid-value": "A value is not valid for its field",
        "source-missing": "The source table of this job was not kept",
    }
)

MSG_METHOD = "Use {allowed}."
MSG_NOT_A_REVIEWER = "Only reviewers and admins of the job's workspace review it."
MSG_NUMBER = "`{name}` must be a whole number from {low} to {high}."
MSG_TWICE = "Item index {index} appears twice in `items`."
PAGE_MAX = 500
SOURCE_AROUND_MAX = 200
ROW_MAX = 10_000_000
# A reviewer's value or find/replace text: longer than any field a sheet
# holds, short enough that a save stays cheap.
TEXT_MAX = 2_000
REASON_MAX = 2_000


# --- shapes: the parser of the API's bodies and their description -----------------

EditableField = Literal[EDITABLE_FIELDS]  # type: ignore[valid-type]
Text = Annotated[str, StringConstraints(max_length=TEXT_MAX)]
MSG_VALUE = f"must be text of at most {TEXT_MAX} characters, a number or null"


def _reviewer_value(value):
    """One clear error for a value of a field (the union's own would list each branch)."""
    finite = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if value is None or finite or (isinstance(value, str) and len(value) <= TEXT_MAX):
        return value
    raise ValueError(MSG_VALUE)


Value = Annotated[Text | int | float | None, BeforeValidator(_reviewer_value)]


def _flag_code(value):
    """The wrong code named in the error (the enum's own error only lists the codes)."""
    if value is None or value == "" or (isinstance(value, str) and value in CODES):
        return value
    raise ValueError(MSG_NOT_A_CODE.format(code=value, codes=", ".join(CODES)))


FlagCode = Annotated[Literal[("", *CODES)] | None, BeforeValidator(_flag_code)]  # type: ignore[valid-type]
Scope = Literal[SCOPES]  # type: ignore[valid-type]


class ItemEdit(Schema):
    model_config = ConfigDict(extra="forbid")

    index: json_int(ge=0, le=ROW_MAX) = Field(
        description="The item's position, from 0, in GET /api/jobs/<id>/items."
    )
    set: dict[EditableField, Value] | None = None
    omit: JsonBool | None = None


class ItemFilter(Schema):
    model_config = ConfigDict(extra="forbid")

    flag: FlagCode = Field(None, description='A flag code (catalog/flags.py); any code when left out or "".')
    field: Literal[("", *EDITABLE_FIELDS, "row")] | None = Field(  # type: ignore[valid-type]
        None, description='The flag\'s field, or "row"; any when left out or "".'
    )
    blocking: JsonBool = Field(False, description="Only flags that block approval.")


class SheetValue(Schema):
    model_config = ConfigDict(extra="forbid")

    field: EditableField
    value: Value
    scope: Scope = "all"
    where: ItemFilter | None = Field(None, description="Only the items this filter picks.")


class Replacement(Schema):
    model_config = ConfigDict(extra="forbid")

    field: EditableField
    find: Text
    replace: Text
    whole: JsonBool = False


class ApproveRequest(Schema):
    model_config = ConfigDict(extra="forbid")

    version: Version
    set: dict[EditableField, Value] | None = Field(None, description="A value for every item in `scope`.")
    scope: Scope = "all"
    sets: list[SheetValue] | None = None
    items: list[ItemEdit] | None = None
    replace: list[Replacement] | None = None
    omit: ItemFilter | None = Field(None, description="Omit every item this filter picks.")
    restore: ItemFilter | None = Field(None, description="Restore every item this filter picks.")

    @model_validator(mode="after")
    def _each_item_once(self):
        seen = set()
        for edit in self.items or []:
            if edit.index in seen:
                raise ValueError(MSG_TWICE.format(index=edit.index))
            seen.add(edit.index)
        return self


class RejectRequest(Schema):
    model_config = ConfigDict(extra="forbid")

    version: Version
    reason: str = Field(
        min_length=1, max_length=REASON_MAX, pattern=r"\S", description="Why; shown on the job."
    )


class Publication(Open):
    revision_id: str = Field(description="The published revision (its public id).")
    item_count: int


REVIEW_PROBLEMS = {
    403: "Not a reviewer of the job's workspace, a read-only token, or a failed CSRF check.",
    404: "No such job in your workspaces.",
    409: "The job changed since that version (or is no longer awaiting review).",
}


def _allow(request: HttpRequest, *methods: str) -> None:
    if request.method not in methods:
        raise Problem(
            405,
            "method-not-allowed",
            MSG_METHOD.format(allowed=", ".join(methods)),
            headers={"Allow": ", ".join(methods)},
        )


def _grid_body(request: HttpRequest) -> dict:
    """The page's grid posts the approve body: read with the API's bounded
    parser and typed model, so its values have the API's bounds."""
    data = BoundedJsonParser().parse_body(request) if request.body else {}
    try:
        payload = ApproveRequest.model_validate(data)
    except ValidationError as exc:
        errors = [{**error, "loc": ("body", "payload", *error["loc"])} for error in exc.errors()]
        raise validation_problem(errors) from None
    return _edits_body(payload)


def _reviewer_job(request: HttpRequest, job_id: uuid.UUID) -> tuple[object, Job]:
    """For the API (authenticated by its operation) and the page's grid views."""
    user = caller(request).user if getattr(request, "auth", None) else authenticate(request).user
    try:
        return user, review_job_get(user=user, job_id=job_id)
    except Job.DoesNotExist:
        raise not_found() from None
    except NotAReviewer:
        raise Problem(403, "forbidden", MSG_NOT_A_REVIEWER) from None


def _parsed(data: dict):
    try:
        return version_from_json(data), edits_from_json(data)
    except BadEdits as exc:
        raise Problem(400, "invalid-request", exc.message) from None


def _edits_body(payload: ApproveRequest) -> dict:
    """The body as the edit reader takes it: what was sent, an `omit` of
    null being the same as none."""
    data = payload.model_dump(exclude_unset=True)
    for item in data.get("items") or []:
        if item.get("omit") is None:
            item.pop("omit", None)
    return data


def _stale(exc: ReviewStale) -> Problem:
    return Problem(409, "version-conflict", exc.message, state=exc.state)


def _refused(exc: EditRejected) -> Problem:
    return Problem(422, "invalid-value", exc.message, errors=exc.errors)


def _int(request: HttpRequest, name: str, *, default: int, low: int = 0, high: int = ROW_MAX) -> int:
    raw = request.GET.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise Problem(400, "invalid-request", MSG_NUMBER.format(name=name, low=low, high=high))
    return value


router = Router(tags=["review"])


@router.post(
    "/jobs/{uuid:id}/approve",
    response={200: Publication},
    url_name="job-approve",
    summary="Approve a job awaiting review (with edits)",
)
@answers(
    descriptions={200: "Published."},
    problems={
        **REVIEW_PROBLEMS,
        422: "Flags still block the approval (the edits are kept; `flags` and the new `version` are "
        "in the answer), or an edit is not a valid value.",
    },
)
def job_approve_view(request: HttpRequest, id: uuid.UUID, payload: ApproveRequest):
    """200 {revision_id, item_count}; 422 with the flags that still block
    (the edits are saved, and the new version is in the answer)."""
    user, _ = _reviewer_job(request, id)
    version, edits = _parsed(_edits_body(payload))
    try:
        result = review_approve(user=user, job_id=id, expected_version=version, edits=edits)
    except ApprovalBlocked as blocked:
        try:
            saved = review_save_edits(user=user, job_id=id, expected_version=version, edits=edits)
        except ReviewStale as exc:
            raise _stale(exc) from None
        raise Problem(
            422, "approval-blocked", blocked.message, version=saved, flags=blocked.problems
        ) from None
    except ReviewStale as exc:
        raise _stale(exc) from None
    except EditRejected as exc:
        raise _refused(exc) from None
    except SourceTableMissing as exc:
        raise Problem(409, "source-missing", exc.message) from None
    return JsonResponse(result)


@router.post(
    "/jobs/{uuid:id}/reject",
    response={200: JobVersion},
    url_name="job-reject",
    summary="Reject a job awaiting review",
)
@answers(descriptions={200: "Rejected: the job needs attention."}, problems=REVIEW_PROBLEMS)
def job_reject_view(request: HttpRequest, id: uuid.UUID, payload: RejectRequest):
    user, _ = _reviewer_job(request, id)
    try:
        review_reject(user=user, job_id=id, expected_version=payload.version, reason=payload.reason)
    except ReasonRequired as exc:
        raise Problem(400, "invalid-request", exc.message) from None
    except ReviewStale as exc:
        raise _stale(exc) from None
    job = Job.objects.get(pk=id)
    return {"id": job.pk, "state": job.state, "version": job.version}


@csrf_exempt
@api_view
def grid_save_view(request: HttpRequest, id: uuid.UUID) -> HttpResponse:
    """The page's "Save edits": the approve body, stored without approving."""
    _allow(request, "POST")
    user, _ = _reviewer_job(request, id)
    version, edits = _parsed(_grid_body(request))
    try:
        saved = review_save_edits(user=user, job_id=id, expected_version=version, edits=edits)
    except ReviewStale as exc:
        raise _stale(exc) from None
    except EditRejected as exc:
        raise _refused(exc) from None
    except SourceTableMissing as exc:
        raise Problem(409, "source-missing", exc.message) from None
    # The grid redraws from this answer (version, flags, summary) without a reload.
    _, job = _reviewer_job(request, id)
    state = review_grid_state(snapshot=review_snapshot_current(job=job))
    return JsonResponse({**state, "version": saved, "changed": saved != version})


@csrf_exempt
@api_view
def grid_preview_view(request: HttpRequest, id: uuid.UUID) -> HttpResponse:
    """The summary shown before approving; writes nothing."""
    _allow(request, "POST")
    user, _ = _reviewer_job(request, id)
    version, edits = _parsed(_grid_body(request))
    try:
        return JsonResponse(review_preview(user=user, job_id=id, expected_version=version, edits=edits))
    except ReviewStale as exc:
        raise _stale(exc) from None
    except EditRejected as exc:
        raise _refused(exc) from None
    except SourceTableMissing as exc:
        raise Problem(409, "source-missing", exc.message) from None


@csrf_exempt
@api_view
def grid_items_view(request: HttpRequest, id: uuid.UUID) -> HttpResponse:
    """One page of items (`start`, `count`) with their flags and provenance,
    sliced in the database so a page of a huge sheet stays small."""
    _allow(request, "GET", "HEAD")
    _, job = _reviewer_job(request, id)
    start = _int(request, "start", default=0)
    count = min(_int(request, "count", default=200, low=1), PAGE_MAX)
    snapshot = review_snapshot_current(job=job)
    return HttpResponse(
        review_item_page_json(snapshot=snapshot, start=start, count=count), content_type="application/json"
    )


@csrf_exempt
@api_view
def grid_source_view(request: HttpRequest, id: uuid.UUID) -> HttpResponse:
    """The source rows of one sheet around a row (`sheet` name, `row` 1-based)."""
    _allow(request, "GET", "HEAD")
    _, job = _reviewer_job(request, id)
    row = _int(request, "row", default=1, low=1)
    around = min(_int(request, "around", default=15, low=0), SOURCE_AROUND_MAX)
    return JsonResponse(
        review_source_rows(job=job, sheet=request.GET.get("sheet", ""), row=row, around=around)
    )


@csrf_exempt
@api_view
def grid_matches_view(request: HttpRequest, id: uuid.UUID) -> HttpResponse:
    """The items a filter picks (`flag` code, `field`, `blocking=1`), as
    inclusive runs of indexes: the grid shows them and selects them all."""
    _allow(request, "GET", "HEAD")
    _, job = _reviewer_job(request, id)
    try:
        where = filter_from_json(
            {
                "flag": request.GET.get("flag", ""),
                "field": request.GET.get("field", ""),
                "blocking": request.GET.get("blocking") in ("1", "true"),
            }
        )
    except BadEdits as exc:
        raise Problem(400, "invalid-request", exc.message) from None
    snapshot = review_snapshot_current(job=job)
    indexes = review_matching_indexes(snapshot=snapshot, where=where)
    return JsonResponse({"version": snapshot.version, "count": len(indexes), "ranges": index_ranges(indexes)})


@csrf_exempt
@api_view
def grid_check_view(request: HttpRequest, id: uuid.UUID) -> HttpResponse:
    """One cell's value checked as the reviewer commits it (`field`, `value`,
    and the item's `description` for units): {ok, value} or {ok: false, message}."""
    _allow(request, "GET", "HEAD")
    _reviewer_job(request, id)
    try:
        value, message = value_check(
            name=request.GET.get("field", ""),
            value=request.GET.get("value", ""),
            description=request.GET.get("description", ""),
        )
    except EditRejected as exc:
        raise Problem(400, "invalid-request", exc.message) from None
    if message:
        return JsonResponse({"ok": False, "message": message})
    return JsonResponse({"ok": True, "value": value})
