"""Reviewer pages. Only reviewers and admins of a job's workspace see them:
a member without the role gets 403, anyone else a 404 like an unknown id."""

import re
import uuid
from collections import defaultdict

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from jobs.models import Job, State
from review.selectors import (
    CHECKED_CODES,
    NotAReviewer,
    flag_counts,
    job_sources,
    review_job_get,
    review_page,
    review_queue,
    user_is_reviewer_anywhere,
)
from review.services import (
    ApprovalBlocked,
    EditRejected,
    ReasonRequired,
    ReviewEdits,
    ReviewStale,
    SourceTableMissing,
    review_approve,
    review_reject,
    review_save_edits,
)

MSG_NOT_A_REVIEWER = "Only reviewers and admins of a workspace review its extractions."
MSG_BAD_VERSION = "The form did not say which version of the job it was made from; reload the page."
MSG_SAVED = "Edits saved (version {version}). {remaining}"
MSG_REMAINING = "{flags} flag(s) remain on {items} item(s)."
MSG_CLEAN = "No flags remain: the items can be approved."
MSG_NOTHING_SAVED = "There were no edits to save."
MSG_APPROVED = "Approved: revision {revision_id} published with {item_count} items."
MSG_REJECTED = "Rejected: nothing was published; the job needs attention."
MSG_BLOCKED_SAVED = "Your edits were saved so far (version {version})."
QUEUE_PAGE_SIZE = 50

_FIELD_RE = re.compile(r"^item-(\d{1,7})-(sku|description|unit|pack_size|unit_price|currency|remove)$")


def _job_or_deny(request: HttpRequest, job_id: uuid.UUID) -> Job:
    try:
        return review_job_get(user=request.user, job_id=job_id)
    except Job.DoesNotExist:
        # Another workspace's job answers exactly like an unknown id.
        raise Http404("No such job.") from None
    except NotAReviewer:
        raise PermissionDenied(MSG_NOT_A_REVIEWER) from None


def _version(request: HttpRequest) -> int | None:
    try:
        return int(request.POST.get("version", ""))
    except ValueError:
        return None


def _edits(request: HttpRequest) -> ReviewEdits:
    """The grid as posted. The page's script posts only the inputs the
    reviewer changed; without it every input comes back, which is the same."""
    rows: dict[int, dict[str, str]] = defaultdict(dict)
    remove: set[int] = set()
    for key, value in request.POST.items():
        match = _FIELD_RE.match(key)
        if match is None:
            continue
        index, name = int(match.group(1)), match.group(2)
        if name == "remove":
            remove.add(index)
        else:
            rows[index][name] = value
    return ReviewEdits(
        rows=dict(rows), remove=frozenset(remove),
        currency=request.POST.get("currency_override", ""),
        currency_scope=request.POST.get("currency_scope", "missing") or "missing",
        unit=request.POST.get("unit_override", ""),
    )


def _back(job_id: uuid.UUID) -> HttpResponse:
    return redirect(reverse("review:detail", args=[job_id]))


@login_required
@require_GET
def queue(request: HttpRequest) -> HttpResponse:
    if not user_is_reviewer_anywhere(user=request.user):
        raise PermissionDenied(MSG_NOT_A_REVIEWER)
    page = Paginator(review_queue(user=request.user), QUEUE_PAGE_SIZE).get_page(request.GET.get("page"))
    jobs = list(page)
    sources = job_sources(jobs=jobs)
    return render(request, "review/queue.html",
                  {"page": page, "rows": [(job, sources[job.pk]) for job in jobs]})


@login_required
@require_GET
def detail(request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
    job = _job_or_deny(request, job_id)
    return render(request, "review/detail.html", {
        "page": review_page(job=job),
        "job": job,
        "awaiting": job.state == State.AWAITING_REVIEW,
        "checked_codes": CHECKED_CODES,
    })


@login_required
@require_POST
def save(request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
    _job_or_deny(request, job_id)
    version = _version(request)
    if version is None:
        return HttpResponseBadRequest(MSG_BAD_VERSION)
    try:
        new_version = review_save_edits(user=request.user, job_id=job_id,
                                        expected_version=version, edits=_edits(request))
    except (ReviewStale, EditRejected, SourceTableMissing) as exc:
        messages.error(request, exc.message)
        return _back(job_id)
    if new_version == version:
        messages.info(request, MSG_NOTHING_SAVED)
    else:
        flags, flagged = flag_counts(job=review_job_get(user=request.user, job_id=job_id))
        remaining = (MSG_REMAINING.format(flags=flags, items=flagged) if flags else MSG_CLEAN)
        messages.success(request, MSG_SAVED.format(version=new_version, remaining=remaining))
    return _back(job_id)


@login_required
@require_POST
def approve(request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
    _job_or_deny(request, job_id)
    version = _version(request)
    if version is None:
        return HttpResponseBadRequest(MSG_BAD_VERSION)
    edits = _edits(request)
    try:
        result = review_approve(user=request.user, job_id=job_id, expected_version=version,
                                edits=edits)
    except ApprovalBlocked as blocked:
        # Keep the reviewer's work: the edits are saved, so the page they
        # return to shows them with the flags that are left.
        try:
            saved = review_save_edits(user=request.user, job_id=job_id,
                                      expected_version=version, edits=edits)
        except (ReviewStale, EditRejected, SourceTableMissing) as exc:
            messages.error(request, exc.message)
            return _back(job_id)
        messages.error(request, blocked.message)
        if saved != version:
            messages.info(request, MSG_BLOCKED_SAVED.format(version=saved))
        return _back(job_id)
    except (ReviewStale, EditRejected, SourceTableMissing) as exc:
        messages.error(request, exc.message)
        return _back(job_id)
    messages.success(request, MSG_APPROVED.format(**(result or {"revision_id": "?", "item_count": 0})))
    return _back(job_id)


@login_required
@require_POST
def reject(request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
    _job_or_deny(request, job_id)
    version = _version(request)
    if version is None:
        return HttpResponseBadRequest(MSG_BAD_VERSION)
    try:
        review_reject(user=request.user, job_id=job_id, expected_version=version,
                      reason=request.POST.get("reason", ""))
    except (ReviewStale, ReasonRequired) as exc:
        messages.error(request, exc.message)
        return _back(job_id)
    messages.success(request, MSG_REJECTED)
    return _back(job_id)
