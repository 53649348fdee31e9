"""Crash rehearsals with real `runworker` processes: SIGSTOP, SIGKILL,
SIGTERM, and cancellation while a job runs."""

import signal
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models.functions import Now

from jobs.models import Attempt, Job, State
from jobs.services import job_admit, job_cancel, jobs_claim_batch
from tests.helpers import wait_for

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

FAST = {
    "JOB_LEASE_SECONDS": 2,
    "JOB_RECOVERY_INTERVAL_SECONDS": 0.25,
    "JOB_POLL_INTERVAL_SECONDS": 0.2,
    "JOB_BACKOFF_BASE_SECONDS": 0.5,
}


def admit(workspace, kind, payload):
    job, _ = job_admit(workspace_id=workspace.pk, kind=kind, payload=payload)
    return job


def job_row(job_id):
    return Job.objects.get(pk=job_id)


def running_attempt(job_id, number):
    return Job.objects.filter(pk=job_id, state=State.RUNNING, attempt=number).exists()


def lease_expired(job_id):
    with connection.cursor() as cursor:
        cursor.execute("SELECT lease_until < clock_timestamp() FROM jobs_job WHERE id = %s", [job_id])
        return cursor.fetchone()[0]


def test_paused_worker_resumes_after_takeover_and_changes_nothing(workspace, processes):
    job = admit(workspace, "sleep", {"attempt_seconds": {"1": 4, "2": 0.1}})
    a = processes.worker("worker-a", **{**FAST, "JOB_RECOVERY_INTERVAL_SECONDS": 3600})
    wait_for(lambda: running_attempt(job.pk, 1), message="A to claim the job")
    a.send_signal(signal.SIGSTOP)
    wait_for(lambda: lease_expired(job.pk), timeout=10, message="A's lease to expire")

    scan = processes.start("recoverjobs")
    assert scan.wait(timeout=60) == 0
    assert f"{job.pk} -> retrying" in processes.output(scan)

    processes.worker("worker-b", **FAST)
    wait_for(lambda: job_row(job.pk).state == State.COMPLETED, message="B to complete the job")
    assert job_row(job.pk).output == {"worker_id": "worker-b", "attempt": 2}

    a.send_signal(signal.SIGCONT)
    wait_for(
        lambda: Attempt.objects.get(job=job, number=1).outcome == "stale",
        timeout=15,
        message="A's late completion to be recorded as stale",
    )
    stale = Attempt.objects.get(job=job, number=1)
    assert stale.diagnostic["output"] == {"worker_id": "worker-a", "attempt": 1}
    final = job_row(job.pk)
    assert (final.state, final.attempt, final.output["worker_id"]) == (State.COMPLETED, 2, "worker-b")
    assert Attempt.objects.get(job=job, number=2).outcome == "succeeded"


def test_killed_worker_job_is_recovered_and_completed_once(workspace, processes):
    job = admit(workspace, "sleep", {"attempt_seconds": {"1": 600}, "seconds": 0.05})
    a = processes.worker("worker-a", **FAST)
    wait_for(lambda: running_attempt(job.pk, 1), message="A to claim the job")
    b = processes.worker("worker-b", **FAST)
    # Measure recovery, not B's start-up (seconds on a loaded machine).
    wait_for(lambda: "worker-b started" in processes.output(b), timeout=60, message="B to start")
    a.send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    wait_for(
        lambda: running_attempt(job.pk, 2) or job_row(job.pk).state == State.COMPLETED,
        timeout=15,
        message="another worker to take the job",
    )
    recovery = time.monotonic() - killed_at
    wait_for(lambda: job_row(job.pk).state == State.COMPLETED, message="the job to complete")
    outcomes = list(Attempt.objects.filter(job=job).values_list("number", "outcome", "worker_id"))
    assert outcomes == [(1, "expired", "worker-a"), (2, "succeeded", "worker-b")]
    assert job_row(job.pk).output == {"worker_id": "worker-b", "attempt": 2}
    # The lease is 2 s; recovery must come within lease + scan interval +
    # the backoff after an expired lease (at most 0.5 s here) + slack.
    assert recovery < 2 + 0.25 + 0.5 + 3


def test_cancelled_job_stops_worker_at_next_heartbeat(workspace, processes):
    job = admit(workspace, "sleep", {"seconds": 600, "cooperative": True})
    processes.worker("worker-a", **FAST)
    wait_for(lambda: running_attempt(job.pk, 1), message="the worker to claim the job")
    job_cancel(job_id=job.pk, by_label="test")
    follow_up = admit(workspace, "noop", {})
    wait_for(
        lambda: job_row(follow_up.pk).state == State.COMPLETED,
        timeout=15,
        message="the worker to stop the cancelled job and go on",
    )
    cancelled = job_row(job.pk)
    assert (cancelled.state, cancelled.output, cancelled.lease_token) == (State.CANCELLED, None, None)
    assert Attempt.objects.get(job=job).outcome == "cancelled"


def test_sigterm_releases_a_job_at_its_check_in(workspace, processes):
    job = admit(workspace, "sleep", {"attempt_seconds": {"1": 600}, "seconds": 0.05, "cooperative": True})
    a = processes.worker("worker-a", **FAST)
    wait_for(lambda: running_attempt(job.pk, 1), message="the worker to claim the job")
    a.send_signal(signal.SIGTERM)
    assert a.wait(timeout=20) == 0
    released = job_row(job.pk)
    assert (released.state, released.lease_token) == (State.RETRYING, None)
    assert Attempt.objects.get(job=job, number=1).outcome == "released"
    processes.worker("worker-b", **FAST)
    wait_for(lambda: job_row(job.pk).state == State.COMPLETED, message="B to finish the job")


def test_sigterm_keeps_renewing_the_lease_of_a_job_that_does_not_check_in(workspace, processes):
    # Blocks for 5 s like a remote call, with a 2 s lease: only renewals
    # after the signal keep it.
    job = admit(workspace, "sleep", {"seconds": 5, "progress": True})
    waiting = admit(workspace, "noop", {})
    Job.objects.filter(pk=waiting.pk).update(run_after=Now() + timedelta(seconds=1))
    a = processes.worker("worker-a", **FAST)
    # Its handler is running, not only claimed: a claim is released at the check-in before its
    # handler (jobs/worker.py), which a signal right after the "claimed" log line can reach on a
    # busy machine. The handler reported progress, so it is past that check-in.
    wait_for(
        lambda: running_attempt(job.pk, 1) and job_row(job.pk).progress_total == 1,
        message="the worker to start the job's handler",
    )
    a.send_signal(signal.SIGTERM)
    assert a.wait(timeout=30) == 0, processes.output(a)
    done = job_row(job.pk)
    assert (done.state, done.attempt) == (State.COMPLETED, 1), (done.reason, processes.output(a))
    assert done.output["worker_id"] == "worker-a"
    assert list(Attempt.objects.filter(job=job).values_list("outcome", flat=True)) == ["succeeded"]
    # Nothing new was claimed after the signal.
    assert (job_row(waiting.pk).state, job_row(waiting.pk).attempt) == (State.QUEUED, 0)


def test_busy_worker_recovers_another_workers_lapsed_lease(workspace, processes):
    long_job = admit(workspace, "sleep", {"seconds": 600})
    processes.worker("busy", **FAST)
    wait_for(lambda: running_attempt(long_job.pk, 1), message="the worker to start its long job")
    # A job held by a worker that died: claimed, then its lease lapsed.
    orphan = admit(workspace, "noop", {})
    [claim] = jobs_claim_batch(worker_id="dead", limit=1, kinds=["noop"])
    assert claim.job_id == orphan.pk
    Job.objects.filter(pk=orphan.pk).update(lease_until=Now() - timedelta(seconds=1))

    wait_for(
        lambda: job_row(orphan.pk).state != State.RUNNING,
        timeout=30,
        message="the busy worker's recovery clock to expire the orphan's lease",
    )
    assert Attempt.objects.get(job=orphan, number=1).outcome == "expired"
    assert running_attempt(long_job.pk, 1)  # still busy with the long job


def test_second_signal_exits_at_once(workspace, processes):
    job = admit(workspace, "sleep", {"seconds": 600})
    a = processes.worker("worker-a", **FAST)
    # Started, not only claimed (as above): a job not started yet would be released.
    wait_for(
        lambda: f"job {job.pk} attempt 1 (sleep) claimed" in processes.output(a),
        message="the worker to start the job",
    )
    a.send_signal(signal.SIGTERM)
    # Signals of one kind that arrive together are delivered once: wait for
    # the first to be handled before sending the second.
    wait_for(lambda: "no more claims" in processes.output(a), message="the first signal")
    a.send_signal(signal.SIGTERM)
    assert a.wait(timeout=20) == 1
    assert job_row(job.pk).state == State.RUNNING  # the lease will expire; recovery takes it


def test_idle_worker_wakes_on_notify_before_its_poll_interval(workspace, processes):
    processes.worker("worker-a", JOB_POLL_INTERVAL_SECONDS=600, JOB_RECOVERY_INTERVAL_SECONDS=600)
    first = admit(workspace, "noop", {})
    # The first job may be found by the start-up claim; wait until the worker idles.
    wait_for(
        lambda: job_row(first.pk).state == State.COMPLETED,
        timeout=30,
        message="the worker to start and drain",
    )
    job = admit(workspace, "noop", {})
    wait_for(
        lambda: job_row(job.pk).state == State.COMPLETED,
        timeout=10,
        message="NOTIFY to wake the idle worker (it would otherwise poll in 600 s)",
    )


def test_burst_worker_drains_queue_and_exits(workspace, processes):
    jobs = [admit(workspace, "noop", {}) for _ in range(20)]
    worker = processes.worker("burst", "--burst", "--concurrency", "2")
    assert worker.wait(timeout=60) == 0
    assert Job.objects.filter(pk__in=[j.pk for j in jobs], state=State.COMPLETED).count() == 20


def test_shutdown_timeout_releases_a_job_that_does_not_check_in_and_exits(workspace, processes):
    job = admit(workspace, "sleep", {"seconds": 600, "progress": True})
    a = processes.worker("worker-a", "--shutdown-timeout", "1", **FAST)
    # Its handler is running (past the check-in before it, where a stopping worker releases a
    # job it has claimed at once): the job reported progress.
    wait_for(
        lambda: running_attempt(job.pk, 1) and job_row(job.pk).progress_total == 1,
        message="the worker to start the job",
    )
    a.send_signal(signal.SIGTERM)
    assert a.wait(timeout=20) == 1, processes.output(a)
    released = job_row(job.pk)
    assert (released.state, released.lease_token) == (State.RETRYING, None)
    assert released.max_attempts == released.attempt + 5  # the attempt does not count
    assert Attempt.objects.get(job=job, number=1).outcome == "released"
