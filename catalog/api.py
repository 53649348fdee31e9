"""The uploaders' HTTP API (DESIGN.md): admission of a sheet, the jobs list,
a job's status and its items; and what the product's API is called. The
versioned cancel is generic and lives in `jobs.http`.

Every operation authenticates (bearer token or session), scopes every read
and write to the caller's workspaces, and answers errors as problem+json.
"""

from __future__ import annotations

import math
import uuid
from datetime import datetime
from typing import Literal

from django.conf import settings
from ninja.files import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler
from django.http import HttpRequest, JsonResponse
from ninja import File, Form, Header, Query, Router, Schema
from pydantic import Field, field_validator

from accounts.models import Workspace
from catalog.items import JobItem
from catalog.readers import binary_kind
from catalog.selectors import UploadTarget, member_job_with_report, upload_target, with_reading_report
from catalog.services import pricesheet_admit
from catalog.storage import UploadTooLarge
from jobs.http import (
    MAX_PAGE,
    JobState,
    Open,
    PageOut,
    Progress,
    Timings,
    answers,
    caller,
    member_job,
    paginate,
    paging,
)
from jobs.models import Job
from jobs.problems import Problem, not_found, problem_for
from jobs.selectors import NoItems, job_items, job_status, job_url, jobs_with_live_phase

API_TITLE = "Pricesheet API"
API_DESCRIPTION = (
    "Upload supplier price sheets as durable jobs, follow and review them, and read the "
    "published catalog. Authenticate with `Authorization: Bearer TOKEN` (a `read` token may "
    "only read) or the browser session. Errors are `application/problem+json` (RFC 9457)."
)

MSG_NO_ITEMS = "Jobs of this kind have no items."
MSG_SUPPLIER_TOO_LONG = "The supplier name is longer than 200 characters."
MSG_NOT_MEMBER = "You are not a member of a workspace {slug!r}."
MSG_WORKSPACE_REQUIRED = "You belong to several workspaces: send the field `workspace` (a slug)."
MSG_LENGTH_REQUIRED = "Send the upload with a Content-Length (chunked uploads are not accepted)."
MSG_BAD_LENGTH = "Content-Length is not a number."
MSG_NOT_A_SHEET = "The file is {kind}, not a price sheet: send a spreadsheet (CSV, XLSX, XLS, ODS) or a PDF."
MSG_RATE = (
    "This workspace has uploaded {limit} sheets in the last minute "
    "(UPLOAD_RATE_PER_MINUTE); try again in {seconds} s."
)

UPLOAD_PATH = "/api/jobs"
PAGE_SIZE = 20
PAGE_SIZE_MAX = 100
# A job's items: small sheets are one page; a large one is read page by page.
ITEMS_PAGE_SIZE = 500
ITEMS_PAGE_SIZE_MAX = 5000
# Room for the multipart framing around the file (boundaries, part headers,
# the small text fields) when comparing Content-Length with the file limit.
MULTIPART_ALLOWANCE_BYTES = 64 * 1024


# --- shapes ----------------------------------------------------------------------


class JobResult(Open):
    revision_id: uuid.UUID | None = Field(description="The published revision (its public id).")
    item_count: int | None
    unchanged: bool | None = Field(
        default=None,
        description="Present and true when the sheet was identical to the "
        "supplier's current revision, which `revision_id` names: nothing new was published.",
    )
    note: str | None = Field(default=None, description="Why, when `unchanged`.")


class Layout(Open):
    source: Literal["inferred", "reviewer", "remembered"] | None = None
    approved_by: str | None = None
    approved_at: datetime | None = None


class JobStatus(Open):
    id: uuid.UUID
    state: JobState
    attempt: int
    max_attempts: int
    progress: Progress
    reason: str
    created_at: datetime
    updated_at: datetime
    timings: Timings
    result: JobResult | None
    links: dict[str, str]
    # What a job's kind adds (jobs.registry): a sheet job's reading report.
    columns: list[Open] | None = Field(
        None,
        description="A sheet job's: per sheet read, its header row and each column's role, "
        "evidence and confidence; null before the sheet is read.",
    )
    layout: Layout | None = Field(
        None, description="A sheet job's: where the columns came from; null before reading."
    )


class JobPage(PageOut):
    results: list[JobStatus]


class Admission(Open):
    id: uuid.UUID
    state: JobState
    status_url: str


ItemsPaging = paging(default=ITEMS_PAGE_SIZE, maximum=ITEMS_PAGE_SIZE_MAX)


class JobItemPage(PageOut):
    """One page of a job's items, in the order of its output."""

    items: list[JobItem]


class JobListQuery(Schema):
    state: list[JobState] | None = Field(
        None, description="Only jobs in these states (repeat the parameter, or separate by commas)."
    )
    page: int = Field(1, ge=1, le=MAX_PAGE, description="From 1.")
    page_size: int = Field(PAGE_SIZE, ge=1, le=PAGE_SIZE_MAX, description=f"At most {PAGE_SIZE_MAX}.")

    @field_validator("state", mode="before")
    @classmethod
    def _comma_separated(cls, value):
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list):
            return [part for raw in value for part in str(raw).split(",") if part] or None
        return value


# --- admission (shared by the API, the upload page and `seeddemo`) ---------------


class UploadLimitHandler(FileUploadHandler):
    """First in the chain of upload handlers: counts the bytes of the file as
    they stream in and stops the parse once past the limit, so a missing or
    lying Content-Length cannot make the server read more than limit + one chunk."""

    chunk_size = 64 * 1024

    def __init__(self, request=None, *, limit: int):
        super().__init__(request)
        self.limit = limit
        self.received = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        if self.received > self.limit:
            raise UploadTooLarge(self.limit)
        return raw_data

    def file_complete(self, file_size: int):
        return None  # the next handler in the chain builds the file


def bound_upload(request: HttpRequest) -> None:
    """411/413 on the declared length, then the streaming limit: called
    before anything reads the body (the API's middleware, the upload page)."""
    limit = settings.UPLOAD_MAX_BYTES
    try:
        refuse_declared_oversize(request, limit)
    except UploadTooLarge as exc:
        raise _upload_too_large(exc) from exc
    limit_upload(request, limit)


def refuse_declared_oversize(request: HttpRequest, limit: int) -> None:
    """413 before a byte of the body is read, when Content-Length says so.
    Without a Content-Length (a chunked body) WSGI gives Django an empty body,
    so such uploads are refused as 411 rather than misread as 'no file'."""
    raw = request.META.get("CONTENT_LENGTH")
    if not raw:
        raise Problem(411, "length-required", MSG_LENGTH_REQUIRED)
    try:
        declared = int(raw)
    except ValueError:
        raise Problem(400, "invalid-request", MSG_BAD_LENGTH) from None
    if declared > limit + MULTIPART_ALLOWANCE_BYTES:
        raise UploadTooLarge(limit)


def limit_upload(request: HttpRequest, limit: int) -> None:
    """Install the streaming limit; call before anything reads request.POST."""
    request.upload_handlers.insert(0, UploadLimitHandler(request, limit=limit))


def member_workspace(user, slug: str | None, target: UploadTarget) -> Workspace:
    """The workspace an upload goes to: the named one (if the caller is a
    member), else the caller's only workspace (`target`, read for both)."""
    spaces = target.workspaces
    if slug:
        if not spaces:
            raise Problem(404, "not-found", MSG_NOT_MEMBER.format(slug=slug))
        return spaces[0]
    if not spaces:
        raise Problem(403, "no-workspace")
    if len(spaces) > 1:
        mine = Workspace.objects.for_member(user).order_by("slug")
        raise Problem(
            400,
            "workspace-required",
            MSG_WORKSPACE_REQUIRED,
            workspaces=list(mine.values_list("slug", flat=True)),
        )
    return spaces[0]


def clean_supplier_name(raw: str | None) -> str:
    name = " ".join((raw or "").split())
    if len(name) > 200:
        raise Problem(400, "invalid-request", MSG_SUPPLIER_TOO_LONG)
    return name


@problem_for(UploadTooLarge)
def _upload_too_large(exc: UploadTooLarge) -> Problem:
    return Problem(413, "upload-too-large", str(exc), limit_bytes=exc.limit)


# --- helpers ---------------------------------------------------------------------


def job_status_url(job_id: uuid.UUID) -> str:
    return job_url("api:job", job_id)


def _admission_response(job: Job, *, created: bool) -> JsonResponse:
    status_url = job_status_url(job.pk)
    response = JsonResponse({"id": str(job.pk), "state": job.state, "status_url": status_url}, status=202)
    response["Location"] = status_url
    if not created:
        response["Idempotent-Replayed"] = "true"
    return response


def _refuse_over_rate(target: UploadTarget) -> None:
    """429 once the workspace has admitted `UPLOAD_RATE_PER_MINUTE` uploads
    in the last minute; a repeated key (a replay) is always answered."""
    if target.wait_seconds:
        limit = settings.UPLOAD_RATE_PER_MINUTE
        seconds = math.ceil(target.wait_seconds)
        raise Problem(
            429,
            "too-many-requests",
            MSG_RATE.format(limit=limit, seconds=seconds),
            headers={"Retry-After": str(seconds)},
            retry_after_seconds=seconds,
        )


# --- views -----------------------------------------------------------------------

router = Router(tags=["jobs"])

KEY_PATTERN = r"\S"


SHEET_TYPES = (
    "text/csv, text/tab-separated-values, text/plain, "
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet, "
    "application/vnd.ms-excel, application/vnd.oasis.opendocument.spreadsheet, "
    "application/pdf, application/octet-stream"
)


@router.post(
    "/jobs",
    response={202: Admission},
    url_name="jobs",
    summary="Upload a price sheet (admit a job)",
    openapi_extra={
        "requestBody": {
            "content": {"multipart/form-data": {"encoding": {"file": {"contentType": SHEET_TYPES}}}}
        }
    },
)
@answers(
    descriptions={202: "Admitted (or, for a repeated key and request, the same job)."},
    headers={
        202: {
            "Location": "The status resource of the job.",
            "Idempotent-Replayed": "`true` when this key was seen before.",
        },
        429: {"Retry-After": "Seconds until the workspace may upload again."},
    },
    problems={
        400: "No Idempotency-Key, no file, or an empty file.",
        404: "No workspace of yours has the slug in `workspace`.",
        411: "No Content-Length (chunked uploads are refused).",
        413: "Larger than UPLOAD_MAX_BYTES.",
        415: "The file is an image (PNG, JPEG, GIF) or an archive, not a price sheet.",
        422: "The Idempotency-Key was used with another file or supplier.",
        429: "The workspace reached UPLOAD_RATE_PER_MINUTE uploads in the last minute.",
    },
)
def jobs_admit(
    request: HttpRequest,
    file: UploadedFile = File(
        ...,
        description="The price sheet (CSV, TSV, XLSX, XLS, ODS, or a PDF with text), not empty.",
        min_length=1,
    ),
    idempotency_key: str = Header(
        ...,
        alias="Idempotency-Key",
        min_length=1,
        max_length=255,
        pattern=KEY_PATTERN,
        description="Any unique string; the same key and request return the same job.",
    ),
    supplier: str = Form("", max_length=200, description="Created if missing."),
    workspace: str = Form("", max_length=50, description="A slug; needed only with several workspaces."),
):
    """Admission: the sheet is stored, its job queued, and the answer given after commit."""
    who = caller(request)
    key = idempotency_key.strip()
    kind = binary_kind(next(file.chunks(), b"")[:16])
    if kind:
        raise Problem(415, "unsupported-media-type", MSG_NOT_A_SHEET.format(kind=kind))
    supplier_name = clean_supplier_name(supplier)
    # The workspace, the rate window and the supplier in one statement,
    # before a byte is stored.
    target = upload_target(
        user_id=who.user.pk,
        slug=workspace,
        key=key,
        supplier_name=supplier_name,
        limit=settings.UPLOAD_RATE_PER_MINUTE,
    )
    space = member_workspace(who.user, workspace, target)
    _refuse_over_rate(target)
    job, created = pricesheet_admit(
        workspace=space,
        chunks=file.chunks(),
        original_name=file.name or "upload",
        content_type=file.content_type or "",
        idempotency_key=key,
        supplier_name=supplier_name,
        supplier_id=target.supplier_id,
        user=who.user,
    )
    return _admission_response(job, created=created)


@router.get("/jobs", response={200: JobPage}, url_name="jobs", summary="List your workspaces' jobs")
@answers(
    descriptions={200: "One page of jobs, newest first."},
    problems={404: "A page past the last (`/problems/page-out-of-range`, with `last_page`)."},
)
def jobs_list(request: HttpRequest, query: Query[JobListQuery]):
    jobs = Job.objects.for_member(caller(request).user)
    if query.state:
        jobs = jobs.filter(state__in=query.state)
    rows = with_reading_report(jobs_with_live_phase(jobs)).order_by("-created_at", "-id")
    page = paginate(request, rows, page=query.page, page_size=query.page_size)
    return JsonResponse({**page, "results": [job_status(job) for job in page["results"]]})


@router.get("/jobs/{uuid:id}", response={200: JobStatus}, url_name="job", summary="A job's status")
@answers(
    descriptions={200: "The job."},
    headers={200: {"ETag": "The job's version, for If-Match."}},
    problems={404: "No such job in your workspaces."},
)
def job_detail(request: HttpRequest, id: uuid.UUID):
    job = member_job_with_report(user=caller(request).user, job_id=id)
    if job is None:
        raise not_found()
    response = JsonResponse(job_status(job))
    # The version a versioned cancel names (If-Match, or `version` in the body).
    response["ETag"] = f'"{job.version}"'
    return response


@router.get(
    "/jobs/{uuid:id}/items",
    response={200: JobItemPage},
    url_name="job-items",
    summary="A job's items with their flags, one page at a time",
)
@answers(
    descriptions={
        200: "One page of the published items for a completed job, of the staged "
        "ones otherwise, in the output's order."
    },
    problems={
        404: "No such job in your workspaces, a job of a kind without items, or a page "
        "past the last (`/problems/page-out-of-range`, with `last_page`)."
    },
)
def job_items_view(request: HttpRequest, id: uuid.UUID, query: Query[ItemsPaging]):
    job = member_job(caller(request).user, id)
    try:
        rows = job_items(job)
    except NoItems:
        raise Problem(404, "not-found", MSG_NO_ITEMS) from None
    page = paginate(request, rows, page=query.page, page_size=query.page_size)
    return JsonResponse({"items": list(page.pop("results")), **page})
