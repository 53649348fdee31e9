"""The operations dashboard: figures checked against jobs whose timings are
put in place with .update(...), in database time."""

import uuid
from datetime import timedelta

import pytest
from django.db.models.functions import Now

from jobs.models import Attempt, Job, OutboxMessage, State
from jobs.ops import bar_chart
from jobs.selectors_ops import (
    Bucket,
    jobs_per_state,
    lost_attempts_last_24h,
    oldest_claimable_age_seconds,
    outbox_figures,
    phase_times,
    running_jobs,
    throughput_last_hour,
)


def ago(**delta):
    return Now() - timedelta(**delta)


def job_in(workspace, state=State.QUEUED, **fields):
    job = Job.objects.create(workspace=workspace, kind="noop", max_attempts=5)
    if state == State.RUNNING:
        fields = {
            "lease_token": uuid.uuid4(),
            "lease_until": Now() + timedelta(seconds=30),
            "attempt": 1,
            **fields,
        }
    Job.objects.filter(pk=job.pk).update(state=state, **fields)
    return job


def finished(workspace, *, minutes_ago: float, state=State.COMPLETED, **fields):
    return job_in(workspace, state, finished_at=ago(seconds=minutes_ago * 60), attempt=1, **fields)


def attempt_of(job, outcome, *, hours_ago: float, number=1):
    attempt = Attempt.objects.create(
        job=job,
        number=number,
        lease_token=uuid.uuid4(),
        worker_id="host:42",
        outcome=outcome,
        error="lease expired",
    )
    Attempt.objects.filter(pk=attempt.pk).update(finished_at=ago(seconds=hours_ago * 3600))
    return attempt


@pytest.fixture
def staff(django_user_model):
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.create_user("sam", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_job", content_type__app_label="jobs"))
    return user


def test_dashboard_sends_anonymous_visitors_to_login(client, db):
    response = client.get("/ops/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_dashboard_refuses_signed_in_non_staff(client, member):
    client.force_login(member)
    assert client.get("/ops/").status_code == 403


def test_dashboard_refuses_staff_without_the_permission_to_view_jobs(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("stan", is_staff=True))
    assert client.get("/ops/").status_code == 403


def test_jobs_per_state_counts_every_state(workspace):
    job_in(workspace, State.QUEUED)
    job_in(workspace, State.QUEUED)
    job_in(workspace, State.RUNNING)
    finished(workspace, minutes_ago=1)

    counts = jobs_per_state()

    assert counts == {
        "queued": 2,
        "running": 1,
        "retrying": 0,
        "awaiting_review": 0,
        "completed": 1,
        "needs_attention": 0,
        "cancelled": 0,
    }


def test_oldest_claimable_age_is_measured_from_run_after(workspace):
    job_in(workspace, State.QUEUED, run_after=ago(seconds=120))
    job_in(workspace, State.RETRYING, run_after=ago(seconds=30))
    job_in(workspace, State.RETRYING, run_after=Now() + timedelta(minutes=10))  # not due yet
    job_in(workspace, State.RUNNING, run_after=ago(hours=2))  # claimed, not waiting

    assert oldest_claimable_age_seconds() == pytest.approx(120, abs=1)


def test_oldest_claimable_age_is_none_when_nothing_waits(workspace):
    job_in(workspace, State.RETRYING, run_after=Now() + timedelta(minutes=10))
    assert oldest_claimable_age_seconds() is None


def test_throughput_counts_completed_jobs_per_five_minute_bucket(workspace):
    finished(workspace, minutes_ago=2.5)
    finished(workspace, minutes_ago=4)
    finished(workspace, minutes_ago=7.5)
    finished(workspace, minutes_ago=57)
    finished(workspace, minutes_ago=70)  # more than an hour ago
    finished(workspace, minutes_ago=1, state=State.NEEDS_ATTENTION)  # not a completion

    buckets = throughput_last_hour()

    assert len(buckets) == 12
    assert buckets[-1] == Bucket(start_minutes_ago=5, end_minutes_ago=0, count=2)
    assert buckets[-2] == Bucket(start_minutes_ago=10, end_minutes_ago=5, count=1)
    assert buckets[0] == Bucket(start_minutes_ago=60, end_minutes_ago=55, count=1)
    assert sum(b.count for b in buckets) == 4


def test_phase_percentiles_cover_jobs_finished_in_the_last_24_hours(workspace):
    finished(workspace, minutes_ago=5, waiting_seconds=10, running_seconds=1)
    finished(workspace, minutes_ago=60, waiting_seconds=20, running_seconds=2, state=State.NEEDS_ATTENTION)
    finished(workspace, minutes_ago=600, waiting_seconds=30, running_seconds=3, review_seconds=40)
    finished(
        workspace, minutes_ago=25 * 60, waiting_seconds=1000, running_seconds=1000, review_seconds=1000
    )  # outside the window
    job_in(workspace, State.QUEUED, waiting_seconds=5000)  # not finished

    times = phase_times()

    # percentile_cont interpolates: p95 of (10, 20, 30) is 20 + 0.9 * 10.
    assert (times.waiting.jobs, times.waiting.p50, times.waiting.p95) == (3, 20, pytest.approx(29))
    assert (times.running.jobs, times.running.p50, times.running.p95) == (3, 2, pytest.approx(2.9))
    assert (times.review.jobs, times.review.p50, times.review.p95) == (1, 40, 40)


def test_running_time_percentiles_leave_out_jobs_that_never_ran(workspace):
    finished(workspace, minutes_ago=5, running_seconds=8)
    job_in(workspace, State.CANCELLED, finished_at=ago(minutes=5), attempt=0, waiting_seconds=3)

    times = phase_times()

    assert (times.running.jobs, times.running.p50) == (1, 8)
    assert times.waiting.jobs == 2


def test_phase_percentiles_are_empty_without_finished_jobs(db):
    times = phase_times()
    assert (times.waiting.jobs, times.waiting.p50, times.waiting.p95) == (0, None, None)


def test_lost_attempts_are_stale_or_expired_ones_of_the_last_24_hours(workspace):
    job = job_in(workspace, State.RETRYING)
    attempt_of(job, Attempt.Outcome.STALE, hours_ago=1, number=1)
    attempt_of(job, Attempt.Outcome.EXPIRED, hours_ago=2, number=2)
    attempt_of(job, Attempt.Outcome.EXPIRED, hours_ago=30, number=3)  # too old
    attempt_of(job, Attempt.Outcome.FAILED, hours_ago=1, number=4)  # not lost

    counts, latest = lost_attempts_last_24h()

    assert counts == {"stale": 1, "expired": 1}
    assert [(a.number, a.outcome) for a in latest] == [(1, "stale"), (2, "expired")]


def test_outbox_figures_count_backlog_and_failures(workspace):
    def message(**fields):
        row = OutboxMessage.objects.create(workspace=workspace, topic="job.completed", payload={})
        OutboxMessage.objects.filter(pk=row.pk).update(**fields)

    message(created_at=ago(minutes=10), available_at=ago(minutes=10))
    message(available_at=Now() + timedelta(minutes=5))  # retry scheduled
    message(failed_at=ago(hours=2))
    message(failed_at=ago(hours=48))
    message(delivered_at=ago(minutes=1))

    figures = outbox_figures()

    assert (figures.pending, figures.due) == (2, 1)
    assert figures.oldest_pending_seconds == pytest.approx(600, abs=1)
    assert (figures.failed, figures.failed_last_24h) == (2, 1)
    assert figures.delivered_last_hour == 1


def test_running_jobs_show_worker_and_lease_seconds_left_in_database_time(workspace):
    job_in(
        workspace,
        State.RUNNING,
        worker_id="host-a:1",
        lease_until=Now() + timedelta(seconds=30),
        state_changed_at=ago(seconds=45),
    )
    job_in(workspace, State.RUNNING, worker_id="host-b:2", lease_until=ago(seconds=5))

    rows = running_jobs()

    # Ordered by lease expiry: the overdue one first.
    assert [r.worker_id for r in rows] == ["host-b:2", "host-a:1"]
    assert rows[0].lease_seconds_left < -4
    assert 25 < rows[1].lease_seconds_left <= 30
    assert rows[1].running_seconds == pytest.approx(45, abs=1)


def test_bar_chart_scales_bars_to_the_largest_bucket():
    buckets = [Bucket(10, 5, 2), Bucket(5, 0, 4)]

    bars, top = bar_chart(buckets, width=200, height=136)  # 100 px between the margins

    assert top == 4
    assert [b.height for b in bars] == [50, 100]
    assert [b.y + b.height for b in bars] == [116, 116]  # one baseline
    assert bars[1].x > bars[0].x + bars[0].width


def test_dashboard_shows_the_figures_and_an_svg_chart(client, staff, workspace):
    finished(workspace, minutes_ago=2.5, waiting_seconds=10)
    finished(workspace, minutes_ago=2.5, waiting_seconds=30)
    job_in(workspace, State.QUEUED, run_after=ago(seconds=90))
    running = job_in(workspace, State.RUNNING, worker_id="host-a:1")
    attempt_of(running, Attempt.Outcome.EXPIRED, hours_ago=1)
    client.force_login(staff)

    response = client.get("/ops/")

    assert response.status_code == 200
    assert response.context["per_state"]["completed"] == 2
    assert response.context["oldest_claimable_seconds"] == pytest.approx(90, abs=1)
    assert response.context["completed_last_hour"] == 2
    assert response.context["phases"].waiting.p50 == 20
    page = response.content.decode()
    assert page.count("<g data-count=") == 12
    assert '<g data-count="2">' in page
    assert "host-a:1" in page
    assert f"/admin/jobs/job/{running.pk}/change/" in page
