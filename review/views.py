"""Reviewer pages. Only reviewers and admins of a job's workspace see them:
a member without the role gets 403, anyone else a 404 like an unknown id."""

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from jobs.models import Job, State
from catalog.flags import Code, registry_json
from catalog.models import CatalogRevision
from review.selectors import (
    EDITABLE_FIELDS,
    FIELD_LABELS,
    index_ranges,
    NotAReviewer,
    job_sources,
    review_job_get,
    review_page,
    review_queue,
    user_is_reviewer_anywhere,
)
from review.decisions import ReasonRequired, ReviewStale
from review.edits import (
    CHECKED_FIELDS,
    MSG_CHECK_CURRENCY,
    MSG_CHECK_PACK,
    MSG_CHECK_PRICE,
    VALUE_CODES,
)
from review.services import review_reject, review_snapshot_current

MSG_NOT_A_REVIEWER = "Only reviewers and admins of a workspace review its extractions."
MSG_BAD_VERSION = "The form did not say which version of the job it was made from; reload the page."
MSG_APPROVED = "Approved: revision {revision} published with {item_count} items."
MSG_QUEUE_EMPTY = "Nothing else waits for review."
MSG_REJECTED = "Rejected: nothing was published; the job needs attention."
QUEUE_PAGE_SIZE = 50


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
    return render(
        request, "review/queue.html", {"page": page, "rows": [(job, sources[job.pk]) for job in jobs]}
    )


@login_required
@require_GET
def detail(request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
    job = _job_or_deny(request, job_id)
    page = review_page(job=job, snapshot=review_snapshot_current(job=job))
    return render(
        request,
        "review/detail.html",
        {
            "page": page,
            "job": job,
            "awaiting": job.state == State.AWAITING_REVIEW,
            "fields": [(name, FIELD_LABELS[name]) for name in EDITABLE_FIELDS],
            "grid_config": {
                "job": str(job.pk),
                "version": job.version,
                "total": page.total,
                "flagged": index_ranges(page.flagged),
                "editable": job.state == State.AWAITING_REVIEW,
                "fields": list(EDITABLE_FIELDS),
                "labels": FIELD_LABELS,
                "flags": registry_json(),
                "checked_fields": list(CHECKED_FIELDS),
                "check_messages": {
                    "unit_price": MSG_CHECK_PRICE,
                    "pack_size": MSG_CHECK_PACK,
                    "currency": MSG_CHECK_CURRENCY,
                },
                # The flags a value checked as its cell is committed answers at once.
                "value_codes": sorted(VALUE_CODES | {Code.UNSUPPORTED_SOURCE}),
                "urls": {
                    "items": reverse("review:items", args=[job.pk]),
                    "source": reverse("review:source", args=[job.pk]),
                    "save": reverse("review:save", args=[job.pk]),
                    "preview": reverse("review:preview", args=[job.pk]),
                    "matches": reverse("review:matches", args=[job.pk]),
                    "check": reverse("review:check", args=[job.pk]),
                    "approve": reverse("api:job-approve", args=[job.pk]),
                    "next": reverse("review:next", args=[job.pk]),
                },
            },
        },
    )


@login_required
@require_GET
def next_job(request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
    """Where a reviewer lands after approving: the next job waiting in the
    queue (oldest first), or the queue when none is left."""
    job = _job_or_deny(request, job_id)
    revision = CatalogRevision.objects.filter(job_id=job.pk).first()
    if revision is not None:
        messages.success(
            request, MSG_APPROVED.format(revision=revision.number, item_count=revision.item_count)
        )
    following = review_queue(user=request.user).exclude(pk=job.pk).first()
    if following is None:
        messages.info(request, MSG_QUEUE_EMPTY)
        return redirect(reverse("review:queue"))
    return redirect(reverse("review:detail", args=[following.pk]))


@login_required
@require_POST
def reject(request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
    _job_or_deny(request, job_id)
    version = _version(request)
    if version is None:
        return HttpResponseBadRequest(MSG_BAD_VERSION)
    try:
        review_reject(
            user=request.user, job_id=job_id, expected_version=version, reason=request.POST.get("reason", "")
        )
    except (ReviewStale, ReasonRequired) as exc:
        messages.error(request, exc.message)
        return _back(job_id)
    messages.success(request, MSG_REJECTED)
    return _back(job_id)
