"""Review over HTTP, with the same rules as the page: approve (with edits)
and reject a job awaiting review; the page's grid reads items and source rows
in pages and saves or previews its edits through the same body.

Authorization is the page's: a job of another workspace is a 404 like an
unknown id; a member without the reviewer role gets 403.
"""

import json
import uuid
from typing import Literal

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from pydantic import BaseModel, ConfigDict, Field

from accounts.auth import authenticate
from jobs.api_schemas import JobVersion, Open
from jobs.models import Job
from jobs.openapi import JSON, Body, json_answer, operation, problem
from jobs.problems import Problem, api_view, not_found
from review.parsing import BadEdits, edits_from_json, version_from_json
from review.selectors import (
    NotAReviewer,
    review_item_page_json,
    review_job_get,
    review_source_rows,
)
from review.decisions import ApprovalBlocked, ReasonRequired, ReviewStale, SourceTableMissing
from review.edits import EditRejected
from review.services import (
    review_approve,
    review_preview,
    review_reject,
    review_save_edits,
    review_snapshot_current,
)

MSG_METHOD = "Use {allowed}."
MSG_BAD_JSON = "The body is not valid JSON."
MSG_NOT_A_REVIEWER = "Only reviewers and admins of the job's workspace review it."
MSG_NUMBER = "`{name}` must be a whole number from {low}."
PAGE_MAX = 500
SOURCE_AROUND_MAX = 200


# --- shapes, for the OpenAPI description (review/parsing.py reads the bodies) ----

Value = str | int | float | None
Scope = Literal["all", "missing", "flagged"]


class ItemEdit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    index: int = Field(ge=0, description="The item's position, from 0, in GET /api/jobs/<id>/items.")
    set: dict[str, Value] | None = None
    omit: bool | None = None


class SheetValue(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str
    value: Value
    scope: Scope = "all"


class Replacement(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str
    find: str
    replace: str
    whole: bool = False


class ApproveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = Field(ge=1, description="The job's version as you read it.")
    set: dict[str, Value] | None = Field(None, description="A value for every item in `scope`.")
    scope: Scope = "all"
    sets: list[SheetValue] | None = None
    items: list[ItemEdit] | None = None
    replace: list[Replacement] | None = None


class RejectRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = Field(ge=1)
    reason: str


class Publication(Open):
    revision_id: str = Field(description="The published revision (its public id).")
    item_count: int


REVIEW_ERRORS = {
    400: problem("A body that is not a valid edit."),
    403: problem("Not a reviewer of the job's workspace, a read-only token, or a failed CSRF check."),
    404: problem("No such job in your workspaces."),
    409: problem("The job changed since that version (or is no longer awaiting review)."),
}


def _allow(request: HttpRequest, *methods: str) -> None:
    if request.method not in methods:
        raise Problem(405, "method-not-allowed", MSG_METHOD.format(allowed=", ".join(methods)),
                      headers={"Allow": ", ".join(methods)})


def _body(request: HttpRequest) -> dict:
    try:
        data = json.loads(request.body or b"{}")
    except ValueError:
        raise Problem(400, "invalid-request", MSG_BAD_JSON) from None
    if not isinstance(data, dict):
        raise Problem(400, "invalid-request", "The body must be a JSON object.")
    return data


def _reviewer_job(request: HttpRequest, job_id: uuid.UUID) -> tuple[object, Job]:
    caller = authenticate(request)
    try:
        return caller.user, review_job_get(user=caller.user, job_id=job_id)
    except Job.DoesNotExist:
        raise not_found() from None
    except NotAReviewer:
        raise Problem(403, "forbidden", MSG_NOT_A_REVIEWER) from None


def _parsed(data: dict):
    try:
        return version_from_json(data), edits_from_json(data)
    except BadEdits as exc:
        raise Problem(400, "invalid-request", exc.message) from None


def _stale(exc: ReviewStale) -> Problem:
    return Problem(409, "version-conflict", exc.message, state=exc.state)


def _refused(exc: EditRejected) -> Problem:
    return Problem(422, "invalid-value", exc.message, errors=exc.errors)


def _int(request: HttpRequest, name: str, *, default: int, low: int = 0) -> int:
    raw = request.GET.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if value < low:
        raise Problem(400, "invalid-request", MSG_NUMBER.format(name=name, low=low))
    return value


@operation("POST", summary="Approve a job awaiting review (with edits)", tags=("review",),
           body=(Body(JSON, ApproveRequest),), answers={
               **REVIEW_ERRORS,
               200: json_answer(Publication, "Published."),
               422: problem("Flags still block the approval (the edits are kept; `flags` and the "
                            "new `version` are in the answer), or an edit is not a valid value."),
           })
@csrf_exempt  # session requests are CSRF-checked in authenticate(); tokens need none
@api_view
def job_approve_view(request: HttpRequest, id: uuid.UUID) -> HttpResponse:
    """200 {revision_id, item_count}; 422 with the flags that still block
    (the edits are saved, and the new version is in the answer)."""
    _allow(request, "POST")
    user, _ = _reviewer_job(request, id)
    version, edits = _parsed(_body(request))
    try:
        result = review_approve(user=user, job_id=id, expected_version=version, edits=edits)
    except ApprovalBlocked as blocked:
        try:
            saved = review_save_edits(user=user, job_id=id, expected_version=version, edits=edits)
        except ReviewStale as exc:
            raise _stale(exc) from None
        raise Problem(422, "approval-blocked", blocked.message, version=saved,
                      flags=blocked.problems) from None
    except ReviewStale as exc:
        raise _stale(exc) from None
    except EditRejected as exc:
        raise _refused(exc) from None
    except SourceTableMissing as exc:
        raise Problem(409, "source-missing", exc.message) from None
    return JsonResponse(result)


@operation("POST", summary="Reject a job awaiting review", tags=("review",),
           body=(Body(JSON, RejectRequest),), answers={
               **REVIEW_ERRORS,
               200: json_answer(JobVersion, "Rejected: the job needs attention."),
           })
@csrf_exempt
@api_view
def job_reject_view(request: HttpRequest, id: uuid.UUID) -> HttpResponse:
    _allow(request, "POST")
    user, _ = _reviewer_job(request, id)
    data = _body(request)
    try:
        version = version_from_json(data)
    except BadEdits as exc:
        raise Problem(400, "invalid-request", exc.message) from None
    reason = data.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise Problem(400, "invalid-request", "`reason` must be a string.")
    try:
        review_reject(user=user, job_id=id, expected_version=version, reason=reason or "")
    except ReasonRequired as exc:
        raise Problem(400, "invalid-request", exc.message) from None
    except ReviewStale as exc:
        raise _stale(exc) from None
    job = Job.objects.get(pk=id)
    return JsonResponse({"id": str(job.pk), "state": job.state, "version": job.version})


@csrf_exempt
@api_view
def grid_save_view(request: HttpRequest, id: uuid.UUID) -> HttpResponse:
    """The page's "Save edits": the approve body, stored without approving."""
    _allow(request, "POST")
    user, _ = _reviewer_job(request, id)
    version, edits = _parsed(_body(request))
    try:
        saved = review_save_edits(user=user, job_id=id, expected_version=version, edits=edits)
    except ReviewStale as exc:
        raise _stale(exc) from None
    except EditRejected as exc:
        raise _refused(exc) from None
    except SourceTableMissing as exc:
        raise Problem(409, "source-missing", exc.message) from None
    return JsonResponse({"version": saved, "changed": saved != version})


@csrf_exempt
@api_view
def grid_preview_view(request: HttpRequest, id: uuid.UUID) -> HttpResponse:
    """The summary shown before approving; writes nothing."""
    _allow(request, "POST")
    user, _ = _reviewer_job(request, id)
    version, edits = _parsed(_body(request))
    try:
        return JsonResponse(review_preview(user=user, job_id=id, expected_version=version,
                                           edits=edits))
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
    return HttpResponse(review_item_page_json(snapshot=snapshot, start=start, count=count),
                        content_type="application/json")


@csrf_exempt
@api_view
def grid_source_view(request: HttpRequest, id: uuid.UUID) -> HttpResponse:
    """The source rows of one sheet around a row (`sheet` name, `row` 1-based)."""
    _allow(request, "GET", "HEAD")
    _, job = _reviewer_job(request, id)
    row = _int(request, "row", default=1, low=1)
    around = min(_int(request, "around", default=15, low=0), SOURCE_AROUND_MAX)
    return JsonResponse(review_source_rows(job=job, sheet=request.GET.get("sheet", ""),
                                           row=row, around=around))
