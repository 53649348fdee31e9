"""Pages for uploaders: the jobs list, the upload form and the job page, and
the small HTML fragments their script polls for live updates.

Everything a page shows is read from the database on each request, so
closing the tab changes nothing: another browser shows the job where it is.
"""

import uuid

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_POST

from accounts.models import Workspace
from accounts.selectors import workspaces_of
from catalog.api import clean_supplier_name, limit_upload, refuse_declared_oversize
from catalog.models import Supplier
from catalog.selectors import (
    job_reading_report,
    job_revision,
    job_sheet,
    job_sheets,
    member_job_with_report,
    sheet_items,
)
from catalog.services import pricesheet_admit
from catalog.readers import accepted_files, format_names
from catalog.storage import UploadTooLarge
from jobs.errors import InsufficientStorage
from jobs.models import REQUEUEABLE_STATES, Job, State
from jobs.problems import Problem
from jobs.selectors import (
    job_attempts,
    job_is_cancellable,
    job_is_finished,
    job_progress_percent,
    job_status,
    job_timings,
    jobs_with_live_phase,
    one_snapshot,
)
from jobs.services import IdempotencyConflict, InvalidTransition, VersionConflict, job_cancel

MSG_TOO_LARGE = "The file is larger than the limit of {limit}."
MSG_EMPTY = "The file is empty."
MSG_NO_FILE = "Choose a price sheet (CSV, TSV, XLSX, XLS, XLSB, ODS or a text PDF) to upload."
MSG_REUSED_FORM = "This form was already used for another upload; it has been reset, upload again."
MSG_CANCELLED = "The job was cancelled."
MSG_NOT_CANCELLABLE = "The job is {state} and can no longer be cancelled."
MSG_CHANGED = "The job changed while you were looking at it (it is now {state}); nothing was done."

LIST_PAGE_SIZE = 25
# Published items on a job page; more are on the following pages.
JOB_ITEMS_PAGE_SIZE = 200
MAX_PAGE = 1_000_000
MSG_BAD_PAGE = "The page number must be from 1 to 1000000."


def duration_text(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def size_text(size: int) -> str:
    for unit in ("bytes", "KiB", "MiB"):
        if size < 1024 or unit == "MiB":
            return f"{size:g} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} bytes"


def _not_found(request: HttpRequest) -> HttpResponse:
    # Standalone page, no CSRF token in it: a job of another workspace and
    # an unknown id must give byte-identical responses.
    return render(request, "jobs/not_found.html", status=404)


def _member_job(user, job_id: uuid.UUID) -> Job | None:
    return member_job_with_report(user=user, job_id=job_id)


# --- the list ------------------------------------------------------------------------


def _list_context(request: HttpRequest) -> dict:
    state = request.GET.get("state") or ""
    if state not in State.values:
        state = ""
    try:
        page = max(int(request.GET.get("page") or 1), 1)
    except ValueError:
        page = 1
    if page > MAX_PAGE:
        # Far past any list, and past what the query's OFFSET can hold.
        raise BadRequest(MSG_BAD_PAGE)
    jobs = Job.objects.for_member(request.user).select_related("workspace")
    if state:
        jobs = jobs.filter(state=state)
    count = jobs.count()
    rows = list(
        jobs_with_live_phase(jobs).order_by("-created_at", "-id")[
            (page - 1) * LIST_PAGE_SIZE : page * LIST_PAGE_SIZE
        ]
    )
    sheets = job_sheets(jobs=rows)
    return {
        "rows": [
            {"job": job, "sheet": sheets.get(job.pk), "percent": job_progress_percent(job)} for job in rows
        ],
        "count": count,
        "state": state,
        "states": State.choices,
        "page": page,
        "has_next": page * LIST_PAGE_SIZE < count,
        "multi_workspace": Workspace.objects.for_member(request.user).count() > 1,
        "query": request.GET.urlencode(),
    }


@login_required
@require_GET
def jobs_list(request: HttpRequest) -> HttpResponse:
    return render(request, "jobs/list.html", _list_context(request))


@login_required
@require_GET
def jobs_list_rows(request: HttpRequest) -> HttpResponse:
    """The list's rows alone, polled by the page every few seconds."""
    return render(request, "jobs/_rows.html", _list_context(request))


# --- the upload form ------------------------------------------------------------


class UploadForm(forms.Form):
    workspace = forms.ChoiceField(required=False)
    supplier = forms.CharField(required=False, max_length=200)
    file = forms.FileField(required=False)
    # One key per rendered form: submitting it twice admits one job.
    idempotency_key = forms.CharField(widget=forms.HiddenInput, max_length=255)

    def __init__(self, *args, workspaces: list[Workspace], **kwargs):
        super().__init__(*args, **kwargs)
        self.workspaces = workspaces
        self.fields["workspace"].choices = [(w.slug, w.name or w.slug) for w in workspaces]

    def clean_workspace(self) -> Workspace | None:
        slug = self.cleaned_data.get("workspace")
        if len(self.workspaces) == 1:
            return self.workspaces[0]
        for workspace in self.workspaces:
            if workspace.slug == slug:
                return workspace
        raise forms.ValidationError("Choose a workspace.")

    def clean_supplier(self) -> str:
        try:
            return clean_supplier_name(self.cleaned_data.get("supplier"))
        except Problem as problem:
            raise forms.ValidationError(problem.detail) from None

    def clean_file(self):
        upload = self.cleaned_data.get("file")
        if upload is None:
            raise forms.ValidationError(MSG_NO_FILE)
        if upload.size == 0:
            raise forms.ValidationError(MSG_EMPTY)
        return upload


def _form_page(request: HttpRequest, form: UploadForm, *, status: int = 200, error: str = "") -> HttpResponse:
    workspaces = form.workspaces
    suppliers = (
        Supplier.objects.filter(workspace__in=workspaces)
        .order_by("name")
        .values_list("name", flat=True)
        .distinct()
    )
    return render(
        request,
        "jobs/new.html",
        {
            "form": form,
            "workspaces": workspaces,
            "suppliers": list(suppliers)[:500],
            "error": error,
            "limit_text": size_text(settings.UPLOAD_MAX_BYTES),
            "limit_bytes": settings.UPLOAD_MAX_BYTES,
            "accept": accepted_files(),
            "formats": format_names(),
        },
        status=status,
    )


def _fresh_form(workspaces: list[Workspace], previous=None) -> UploadForm:
    """An unbound form with a new idempotency key (keeping the previous choices)."""
    initial = {"idempotency_key": str(uuid.uuid4())}
    if previous is not None:
        initial.update(workspace=previous.get("workspace"), supplier=previous.get("supplier"))
    return UploadForm(workspaces=workspaces, initial=initial)


@csrf_protect
def _job_new(request: HttpRequest) -> HttpResponse:
    workspaces = workspaces_of(request.user)
    if request.method != "POST":
        return _form_page(request, _fresh_form(workspaces))
    form = UploadForm(request.POST, request.FILES, workspaces=workspaces)
    if not workspaces or not form.is_valid():
        return _form_page(request, form, status=400)
    upload = form.cleaned_data["file"]
    try:
        job, _ = pricesheet_admit(
            workspace=form.cleaned_data["workspace"],
            chunks=upload.chunks(),
            original_name=upload.name or "upload",
            content_type=upload.content_type or "",
            supplier_name=form.cleaned_data["supplier"],
            idempotency_key=form.cleaned_data["idempotency_key"],
            user=request.user,
        )
    except IdempotencyConflict:
        return _form_page(request, _fresh_form(workspaces, request.POST), status=422, error=MSG_REUSED_FORM)
    return redirect("jobs:detail", id=job.pk)


@csrf_exempt  # checked by _job_new's csrf_protect, once the upload limit is in place
@login_required
def job_new(request: HttpRequest) -> HttpResponse:
    """GET: the upload form. POST: admit the upload (the same services as
    `POST /api/jobs`) and go to the job's page."""
    if request.method == "POST":
        limit = settings.UPLOAD_MAX_BYTES
        try:
            # The limit must be installed before the CSRF check reads the body.
            refuse_declared_oversize(request, limit)
            limit_upload(request, limit)
            return _job_new(request)
        except (UploadTooLarge, Problem, InsufficientStorage) as exc:
            workspaces = workspaces_of(request.user)
            if isinstance(exc, InsufficientStorage):
                return _form_page(request, _fresh_form(workspaces), status=507, error=str(exc))
            if isinstance(exc, Problem):
                return _form_page(request, _fresh_form(workspaces), status=exc.status, error=exc.detail)
            return _form_page(
                request,
                _fresh_form(workspaces),
                status=413,
                error=MSG_TOO_LARGE.format(limit=size_text(limit)),
            )
    return _job_new(request)


# --- the job page ---------------------------------------------------------------


def _job_context(job: Job, items_page: str | None = None) -> dict:
    sheet = job_sheet(job=job)
    timings = job_timings(job)
    attempts = job_attempts(job)
    return {
        "job": job,
        "status": job_status(job),
        "sheet": sheet,
        "size_text": size_text(sheet.size) if sheet else "",
        "percent": job_progress_percent(job),
        "timings": [
            ("Waiting", duration_text(timings["waiting_seconds"])),
            ("Running", duration_text(timings["running_seconds"])),
            ("Awaiting review", duration_text(timings["review_seconds"])),
        ],
        "attempts": [
            {
                "attempt": attempt,
                "duration": duration_text((attempt.finished_at - attempt.started_at).total_seconds())
                if attempt.finished_at
                else "",
            }
            for attempt in attempts
        ],
        # One page of the published items: a large sheet is read page by page.
        "items": (
            Paginator(sheet_items(job), JOB_ITEMS_PAGE_SIZE).get_page(items_page)
            if job.state == State.COMPLETED
            else None
        ),
        "revision": job_revision(job),
        "review_url": (reverse("review:detail", args=[job.pk]) if job.state == State.AWAITING_REVIEW else ""),
        # A sheet that was read and that a reviewer can send back with a mapping.
        "mapping_url": (
            reverse("review:mapping", args=[job.pk])
            if job.state in REQUEUEABLE_STATES and job_reading_report(job)["columns"] is not None
            else ""
        ),
        "cancellable": job_is_cancellable(job),
        "finished": job_is_finished(job),
        "needs_attention": job.state == State.NEEDS_ATTENTION,
    }


@login_required
@require_GET
def job_page(request: HttpRequest, id: uuid.UUID) -> HttpResponse:
    with one_snapshot():  # the state and the attempts as of one moment
        job = _member_job(request.user, id)
        if job is None:
            return _not_found(request)
        return render(request, "jobs/detail.html", _job_context(job, request.GET.get("page")))


@login_required
@require_GET
def job_live(request: HttpRequest, id: uuid.UUID) -> HttpResponse:
    """The job page's live part alone, polled every few seconds."""
    with one_snapshot():  # the state and the attempts as of one moment
        job = _member_job(request.user, id)
        if job is None:
            return _not_found(request)
        return render(request, "jobs/_live.html", _job_context(job))


@login_required
@require_POST
def job_cancel_page(request: HttpRequest, id: uuid.UUID) -> HttpResponse:
    job = _member_job(request.user, id)
    if job is None:
        return _not_found(request)
    try:
        version = int(request.POST.get("version") or 0) or None
    except ValueError:
        version = None
    try:
        job_cancel(job_id=job.pk, expected_version=version, by_label=request.user.get_username())
        messages.success(request, MSG_CANCELLED)
    except VersionConflict as exc:
        messages.error(request, MSG_CHANGED.format(state=exc.state.replace("_", " ")))
    except InvalidTransition as exc:
        messages.error(request, MSG_NOT_CANCELLABLE.format(state=exc.state.replace("_", " ")))
    return redirect("jobs:detail", id=job.pk)
