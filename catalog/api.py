"""The uploaders' HTTP API (DESIGN.md): admission of a sheet, the jobs list,
a job's status and its items. The versioned cancel is generic and lives in
`jobs.http`.

Every view authenticates (bearer token or session), scopes every read and
write to the caller's workspaces, and answers errors as problem+json.
"""

import uuid

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.csrf import csrf_exempt

from accounts.auth import authenticate
from accounts.models import Workspace
from catalog.items import JobItems
from catalog.selectors import job_items, sheet_job_status, with_reading_report
from catalog.services import pricesheet_admit
from catalog.storage import UploadTooLarge
from jobs import api_schemas as schemas
from jobs.http import allow, member_job, positive_int
from jobs.models import Job, State
from jobs.openapi import Body, json_answer, operation, problem
from jobs.problems import Problem, api_view
from jobs.selectors import jobs_with_live_phase

MSG_KEY_REQUIRED = "Send an `Idempotency-Key` header (any unique string, e.g. a UUID) with each upload."
MSG_KEY_TOO_LONG = "The Idempotency-Key is longer than 255 characters."
MSG_FILE_REQUIRED = "Send the sheet as the multipart field `file`."
MSG_EMPTY_FILE = "The uploaded file has no content."
MSG_PAGE_OUT_OF_RANGE = "Page {page} is past the last page ({last}; {count} jobs in all)."
MSG_NOT_MEMBER = "You are not a member of a workspace {slug!r}."
MSG_WORKSPACE_REQUIRED = "You belong to several workspaces: send the field `workspace` (a slug)."
MSG_SUPPLIER_TOO_LONG = "The supplier name is longer than 200 characters."
MSG_UNKNOWN_STATE = "Unknown state {state!r}; states are: {states}."
MSG_LENGTH_REQUIRED = "Send the upload with a Content-Length (chunked uploads are not accepted)."
MSG_BAD_LENGTH = "Content-Length is not a number."

PAGE_SIZE = 20
PAGE_SIZE_MAX = 100
# Room for the multipart framing around the file (boundaries, part headers,
# the small text fields) when comparing Content-Length with the file limit.
MULTIPART_ALLOWANCE_BYTES = 64 * 1024


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


def member_workspace(user, slug: str | None) -> Workspace:
    """The workspace an upload goes to: the named one (if the caller is a
    member), else the caller's only workspace."""
    mine = Workspace.objects.for_member(user).order_by("slug")
    if slug:
        workspace = mine.filter(slug=slug).first()
        if workspace is None:
            raise Problem(400, "invalid-request", MSG_NOT_MEMBER.format(slug=slug))
        return workspace
    spaces = list(mine[:2])
    if not spaces:
        raise Problem(403, "no-workspace")
    if len(spaces) > 1:
        raise Problem(400, "workspace-required", MSG_WORKSPACE_REQUIRED,
                      workspaces=list(mine.values_list("slug", flat=True)))
    return spaces[0]


def clean_supplier_name(raw: str | None) -> str:
    name = (raw or "").strip()
    if len(name) > 200:
        raise Problem(400, "invalid-request", MSG_SUPPLIER_TOO_LONG)
    return name


# --- helpers ---------------------------------------------------------------------


def _admission_response(job: Job, *, created: bool) -> JsonResponse:
    status_url = reverse("api:job", args=[job.pk])
    response = JsonResponse({"id": str(job.pk), "state": job.state, "status_url": status_url},
                            status=202)
    response["Location"] = status_url
    if not created:
        response["Idempotent-Replayed"] = "true"
    return response


# --- views -----------------------------------------------------------------------


def _admit(request: HttpRequest) -> HttpResponse:
    limit = settings.UPLOAD_MAX_BYTES
    refuse_declared_oversize(request, limit)
    limit_upload(request, limit)
    caller = authenticate(request)
    key = request.headers.get("Idempotency-Key", "").strip()
    if not key:
        raise Problem(400, "idempotency-key-required", MSG_KEY_REQUIRED)
    if len(key) > 255:
        raise Problem(400, "invalid-request", MSG_KEY_TOO_LONG)
    upload = request.FILES.get("file")  # the streaming limit applies here
    if upload is None:
        raise Problem(400, "invalid-request", MSG_FILE_REQUIRED)
    if upload.size == 0:
        raise Problem(400, "empty-file", MSG_EMPTY_FILE)
    workspace = member_workspace(caller.user, request.POST.get("workspace"))
    job, created = pricesheet_admit(
        workspace=workspace, chunks=upload.chunks(), original_name=upload.name or "upload",
        content_type=upload.content_type or "", idempotency_key=key,
        supplier_name=clean_supplier_name(request.POST.get("supplier")), user=caller.user,
    )
    return _admission_response(job, created=created)


def _list(request: HttpRequest) -> HttpResponse:
    caller = authenticate(request)
    states = [s for raw in request.GET.getlist("state") for s in raw.split(",") if s]
    for state in states:
        if state not in State.values:
            raise Problem(400, "invalid-request",
                          MSG_UNKNOWN_STATE.format(state=state, states=", ".join(State.values)))
    page = positive_int(request.GET.get("page"), name="page", default=1)
    size = min(positive_int(request.GET.get("page_size"), name="page_size", default=PAGE_SIZE),
               PAGE_SIZE_MAX)
    jobs = Job.objects.for_member(caller.user)
    if states:
        jobs = jobs.filter(state__in=states)
    count = jobs.count()
    last_page = max(1, -(-count // size))
    if page > last_page:
        # Past the end is an error, not an empty page: its `previous` link
        # would point at another page past the end. Page 1 always exists.
        raise Problem(404, "page-out-of-range",
                      MSG_PAGE_OUT_OF_RANGE.format(page=page, last=last_page, count=count),
                      last_page=last_page)
    rows = (with_reading_report(jobs_with_live_phase(jobs)).order_by("-created_at", "-id")
            [(page - 1) * size:page * size])

    def page_url(number: int) -> str:
        query = [("state", s) for s in states] + [("page", number), ("page_size", size)]
        return f"{reverse('api:jobs')}?{urlencode(query)}"

    return JsonResponse({
        "results": [sheet_job_status(job) for job in rows],
        "count": count,
        "next": page_url(page + 1) if page * size < count else None,
        "previous": page_url(page - 1) if page > 1 else None,
    })


@operation(
    "GET", summary="List your workspaces' jobs", tags=("jobs",), query=schemas.JobListQuery,
    answers={200: json_answer(schemas.JobPage, "One page of jobs, newest first."),
             400: problem("An unknown state or a bad page number."),
             404: problem("A page past the last (`/problems/page-out-of-range`, with `last_page`).")})
@operation(
    "POST", summary="Upload a price sheet (admit a job)", tags=("jobs",),
    body=(Body("multipart/form-data", schemas.UploadForm),),
    headers={"Idempotency-Key": ("Any unique string; the same key and request return the same job.",
                                 True)},
    answers={
        202: json_answer(schemas.Admission, "Admitted (or, for a repeated key and request, the same job).",
                         Location="The status resource of the job.",
                         Idempotent_Replayed="`true` when this key was seen before."),
        400: problem("No Idempotency-Key, no file, an empty file, or an unknown workspace."),
        411: problem("No Content-Length (chunked uploads are refused)."),
        413: problem("Larger than UPLOAD_MAX_BYTES."),
        422: problem("The Idempotency-Key was used with another file or supplier."),
    })
@csrf_exempt  # session requests are CSRF-checked in authenticate(); tokens need no check
@api_view
def jobs_collection(request: HttpRequest) -> HttpResponse:
    """POST: admit an upload. GET: the caller's jobs, paginated."""
    allow(request, "GET", "HEAD", "POST")
    if request.method == "POST":
        try:
            return _admit(request)
        except UploadTooLarge as exc:
            raise Problem(413, "upload-too-large", str(exc), limit_bytes=exc.limit) from exc
    return _list(request)


@operation("GET", summary="A job's status", tags=("jobs",), answers={
    200: json_answer(schemas.JobStatus, "The job.", ETag="The job's version, for If-Match."),
    404: problem("No such job in your workspaces."),
})
@csrf_exempt
@api_view
def job_detail(request: HttpRequest, id: uuid.UUID) -> HttpResponse:
    allow(request, "GET", "HEAD")
    caller = authenticate(request)
    job = member_job(caller.user, id)
    response = JsonResponse(sheet_job_status(job))
    # The version a versioned cancel names (If-Match, or `version` in the body).
    response["ETag"] = f'"{job.version}"'
    return response


@operation("GET", summary="A job's items with their flags", tags=("jobs",), answers={
    200: json_answer(JobItems, "Published items for a completed job, staged ones otherwise."),
    404: problem("No such job in your workspaces."),
})
@csrf_exempt
@api_view
def job_items_view(request: HttpRequest, id: uuid.UUID) -> HttpResponse:
    allow(request, "GET", "HEAD")
    caller = authenticate(request)
    job = member_job(caller.user, id, with_output=True)
    return JsonResponse({"items": job_items(job)})
