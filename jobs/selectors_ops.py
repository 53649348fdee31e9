"""Reads behind the operations dashboard and /metrics. Pure reads; every
age and duration is measured in database time."""

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection
from django.db.models import Count, F, FloatField, Func, Max, Q
from django.db.models.functions import Now

from jobs.models import Attempt, Job, OutboxMessage, State

THROUGHPUT_BUCKET_SECONDS = 300
THROUGHPUT_BUCKETS = 12  # one hour
PERCENTILE_WINDOW = timedelta(hours=24)
LOST_ATTEMPT_OUTCOMES = [Attempt.Outcome.STALE, Attempt.Outcome.EXPIRED]


class SecondsSinceNow(Func):
    """Seconds from a timestamp to the database's now()."""

    template = "EXTRACT(EPOCH FROM (now() - %(expressions)s))::double precision"
    output_field = FloatField()


class SecondsUntil(Func):
    """Seconds from the database's wall clock to a timestamp (negative once past)."""

    template = "EXTRACT(EPOCH FROM (%(expressions)s - clock_timestamp()))::double precision"
    output_field = FloatField()


@dataclass(frozen=True)
class Bucket:
    """Jobs completed between `start_minutes_ago` and `end_minutes_ago`."""

    start_minutes_ago: int
    end_minutes_ago: int
    count: int


@dataclass(frozen=True)
class Percentiles:
    jobs: int
    p50: float | None
    p95: float | None


@dataclass(frozen=True)
class PhaseTimes:
    """p50 and p95 of the time jobs finished in the window spent in each
    phase. Running covers jobs that ran at least once; review covers jobs
    that spent any time in review."""

    waiting: Percentiles
    running: Percentiles
    review: Percentiles


@dataclass(frozen=True)
class LostAttempt:
    job_id: uuid.UUID
    kind: str
    workspace: str
    number: int
    outcome: str
    worker_id: str
    finished_at: datetime | None
    error: str


@dataclass(frozen=True)
class OutboxFigures:
    pending: int
    due: int
    oldest_pending_seconds: float | None
    failed: int
    failed_last_24h: int
    delivered_last_hour: int


@dataclass(frozen=True)
class RunningJob:
    job_id: uuid.UUID
    kind: str
    workspace: str
    attempt: int
    max_attempts: int
    worker_id: str
    running_seconds: float
    lease_seconds_left: float


def jobs_per_state() -> dict[str, int]:
    counts = dict(Job.objects.values_list("state").annotate(n=Count("id")).order_by())
    return {state: counts.get(state, 0) for state in State.values}


def oldest_claimable_age_seconds() -> float | None:
    """How long the oldest claimable job has been claimable (since its
    run_after); None when nothing is waiting."""
    return Job.objects.claimable().aggregate(age=Max(SecondsSinceNow(F("run_after"))))["age"]


def throughput_last_hour() -> list[Bucket]:
    """Completed jobs per 5-minute bucket over the last hour, oldest first;
    the last bucket is the five minutes up to now."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT floor(EXTRACT(EPOCH FROM (now() - finished_at)) / %s)::int AS bucket, count(*)
            FROM {Job._meta.db_table}
            WHERE state = %s
              AND finished_at > now() - make_interval(secs => %s)
              AND finished_at <= now()
            GROUP BY bucket
            """,
            [THROUGHPUT_BUCKET_SECONDS, State.COMPLETED, THROUGHPUT_BUCKET_SECONDS * THROUGHPUT_BUCKETS],
        )
        counts = dict(cursor.fetchall())
    minutes = THROUGHPUT_BUCKET_SECONDS // 60
    return [
        Bucket(start_minutes_ago=(age + 1) * minutes, end_minutes_ago=age * minutes, count=counts.get(age, 0))
        for age in reversed(range(THROUGHPUT_BUCKETS))
    ]


def phase_times() -> PhaseTimes:
    """p50/p95 of waiting, running and review time over jobs finished in the
    last 24 hours (PostgreSQL percentile_cont: interpolated)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT count(*),
                   percentile_cont(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY waiting_seconds),
                   count(*) FILTER (WHERE attempt > 0),
                   percentile_cont(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY running_seconds)
                       FILTER (WHERE attempt > 0),
                   count(*) FILTER (WHERE review_seconds > 0),
                   percentile_cont(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY review_seconds)
                       FILTER (WHERE review_seconds > 0)
            FROM {Job._meta.db_table}
            WHERE finished_at >= now() - make_interval(secs => %s)
            """,
            [PERCENTILE_WINDOW.total_seconds()],
        )
        row = cursor.fetchone()

    def pair(count: int, values: list[float] | None) -> Percentiles:
        p50, p95 = values if values else (None, None)
        return Percentiles(jobs=count, p50=p50, p95=p95)

    return PhaseTimes(waiting=pair(row[0], row[1]), running=pair(row[2], row[3]), review=pair(row[4], row[5]))


def lost_attempts_last_24h(*, limit: int = 50) -> tuple[dict[str, int], list[LostAttempt]]:
    """Attempts that ended stale (came back after losing the lease) or
    expired (the scanner took the job back) in the last 24 hours: counts per
    outcome, and the latest ones."""
    recent = Attempt.objects.filter(
        outcome__in=LOST_ATTEMPT_OUTCOMES, finished_at__gte=Now() - PERCENTILE_WINDOW
    )
    counts = dict(recent.values_list("outcome").annotate(n=Count("id")).order_by())
    rows = recent.order_by("-finished_at").values(
        "job_id",
        "job__kind",
        "job__workspace__slug",
        "number",
        "outcome",
        "worker_id",
        "finished_at",
        "error",
    )[:limit]
    latest = [
        LostAttempt(
            job_id=r["job_id"],
            kind=r["job__kind"],
            workspace=r["job__workspace__slug"],
            number=r["number"],
            outcome=r["outcome"],
            worker_id=r["worker_id"],
            finished_at=r["finished_at"],
            error=r["error"],
        )
        for r in rows
    ]
    return {outcome: counts.get(outcome, 0) for outcome in LOST_ATTEMPT_OUTCOMES}, latest


def outbox_figures() -> OutboxFigures:
    pending = Q(delivered_at__isnull=True, failed_at__isnull=True)
    figures = OutboxMessage.objects.aggregate(
        pending=Count("id", filter=pending),
        due=Count("id", filter=pending & Q(available_at__lte=Now())),
        oldest=Max(SecondsSinceNow(F("created_at")), filter=pending),
        failed=Count("id", filter=Q(failed_at__isnull=False)),
        failed_recent=Count("id", filter=Q(failed_at__gte=Now() - PERCENTILE_WINDOW)),
        delivered_recent=Count("id", filter=Q(delivered_at__gte=Now() - timedelta(hours=1))),
    )
    return OutboxFigures(
        pending=figures["pending"],
        due=figures["due"],
        oldest_pending_seconds=figures["oldest"],
        failed=figures["failed"],
        failed_last_24h=figures["failed_recent"],
        delivered_last_hour=figures["delivered_recent"],
    )


def running_jobs(*, limit: int = 100) -> list[RunningJob]:
    """Running jobs with their worker and the seconds left on their lease
    (database time; negative: expired, waiting for the recovery scan)."""
    rows = (
        Job.objects.filter(state=State.RUNNING)
        .annotate(
            running_for=SecondsSinceNow(F("state_changed_at")), lease_left=SecondsUntil(F("lease_until"))
        )
        .order_by("lease_until")
        .values(
            "id",
            "kind",
            "workspace__slug",
            "attempt",
            "max_attempts",
            "worker_id",
            "running_for",
            "lease_left",
        )[:limit]
    )
    return [
        RunningJob(
            job_id=r["id"],
            kind=r["kind"],
            workspace=r["workspace__slug"],
            attempt=r["attempt"],
            max_attempts=r["max_attempts"],
            worker_id=r["worker_id"],
            running_seconds=r["running_for"],
            lease_seconds_left=r["lease_left"],
        )
        for r in rows
    ]


def leases_overdue() -> int:
    """Running jobs whose lease has expired but that recovery has not moved yet."""
    return Job.objects.lease_expired().count()
