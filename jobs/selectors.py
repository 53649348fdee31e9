"""Reads shared by the API, the pages and the reviewer console: the status
representation of a job, its timings and its attempts. A job's kind adds
its own fields and links through the registry (`jobs.registry.JobKind`)."""

import functools
import uuid
from contextlib import contextmanager

from django.db import connection, transaction
from django.db.models import F, QuerySet
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils import timezone

from jobs import registry
from jobs.models import CANCELLABLE_STATES, CLAIMABLE_STATES, FINISHED_STATES, Attempt, Job, State
from jobs.services import SecondsSince


def jobs_with_live_phase(queryset: QuerySet | None = None, *, with_output: bool = False) -> QuerySet:
    """Jobs annotated with `phase_seconds`: the time spent so far in the
    current state, measured in database time like the stored totals.

    The `output` column (a kind's whole output, megabytes for a large one)
    is selected only `with_output`: lists polled every few seconds and the
    status resource never need it."""
    queryset = Job.objects.all() if queryset is None else queryset
    if not with_output:
        queryset = queryset.defer("output")
    return queryset.annotate(phase_seconds=SecondsSince(F("state_changed_at")))


@contextmanager
def one_snapshot():
    """Reads inside see the database as of one moment: one REPEATABLE READ
    transaction, so a claim committing between reading a job and reading
    its attempts cannot show a queued job above a running attempt.

    Inside an enclosing transaction, that transaction decides (its isolation
    level can no longer be changed)."""
    if connection.in_atomic_block:
        yield
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield


def _phase_seconds(job: Job) -> float:
    seconds = getattr(job, "phase_seconds", None)
    if seconds is None:
        # A job read without the annotation: the web server's clock will do.
        seconds = (timezone.now() - job.state_changed_at).total_seconds()
    return max(seconds, 0.0)


def job_timings(job: Job) -> dict:
    """Seconds spent waiting, running and awaiting review, including the
    live portion of the current state (stored totals cover only the past)."""
    waiting, running, review = job.waiting_seconds, job.running_seconds, job.review_seconds
    live = _phase_seconds(job)
    if job.state in CLAIMABLE_STATES:
        waiting += live
    elif job.state == State.RUNNING:
        running += live
    elif job.state == State.AWAITING_REVIEW:
        review += live
    return {
        "waiting_seconds": round(waiting, 3),
        "running_seconds": round(running, 3),
        "review_seconds": round(review, 3),
    }


# Any id: the URL of a job is this one's with the id replaced.
_SOME_ID = uuid.UUID(int=0)


@functools.lru_cache(maxsize=64)
def _around_id(viewname: str, script_prefix: str, urlconf: str | None) -> tuple[str, str]:
    head, _, tail = reverse(viewname, args=[_SOME_ID], urlconf=urlconf).partition(str(_SOME_ID))
    return head, tail


def job_url(viewname: str, job_id: uuid.UUID) -> str:
    """`reverse(viewname, args=[job_id])` for a URL whose one argument is a
    job's id, reversed once per name and script prefix: a status has four
    such links, and clients poll it after every upload."""
    head, tail = _around_id(viewname, get_script_prefix(), get_urlconf())
    return f"{head}{job_id}{tail}"


def job_links(job: Job) -> dict:
    return {"self": job_url("api:job", job.pk), "cancel": job_url("api:job-cancel", job.pk)}


def job_review_link(job: Job) -> str | None:
    """Where a reviewer takes up this job, if its kind has a review."""
    kind = registry.get_kind(job.kind)
    if kind is None or kind.review_link is None:
        return None
    return kind.review_link(job)


def job_page_link(job: Job) -> str | None:
    """The job's own page, if its kind has one."""
    kind = registry.get_kind(job.kind)
    if kind is None or kind.page_link is None:
        return None
    return kind.page_link(job)


def job_status(job: Job) -> dict:
    """The status resource of `GET /api/jobs/<id>` (DESIGN.md, the contract):
    the generic members, then what the job's kind adds (`status_fields`),
    its links merged into the generic ones."""
    status = _generic_status(job)
    if job.state == State.AWAITING_REVIEW and (review := job_review_link(job)):
        status["links"]["review"] = review
    kind = registry.get_kind(job.kind)
    if kind is not None and kind.status_fields is not None:
        extra = dict(kind.status_fields(job))
        status["links"].update(extra.pop("links", {}))
        status.update(extra)
    return status


class NoItems(LookupError):
    """The job's kind has no items view."""


def job_items(job: Job) -> list:
    """The job's items as its kind shows them; NoItems for a kind without."""
    kind = registry.get_kind(job.kind)
    if kind is None or kind.items is None:
        raise NoItems(f"jobs of kind {job.kind!r} have no items")
    return kind.items(job)


def _generic_status(job: Job) -> dict:
    return {
        "id": str(job.pk),
        "state": job.state,
        "attempt": job.attempt,
        "max_attempts": job.max_attempts,
        "progress": {"done": job.progress_done, "total": job.progress_total},
        "reason": job.reason,
        "created_at": job.created_at.isoformat(),
        "updated_at": job.updated_at.isoformat(),
        "timings": job_timings(job),
        "result": job.result or None,
        "links": job_links(job),
    }


def job_attempts(job: Job) -> list[Attempt]:
    return list(Attempt.objects.filter(job=job).order_by("number"))


def job_is_cancellable(job: Job) -> bool:
    return job.state in CANCELLABLE_STATES


def job_is_finished(job: Job) -> bool:
    return job.state in FINISHED_STATES


def job_progress_percent(job: Job) -> int:
    if job.state == State.COMPLETED:
        return 100
    if not job.progress_total:
        return 0
    return min(100, round(100 * job.progress_done / job.progress_total))
