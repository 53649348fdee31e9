"""One claim-run-finish cycle at a time, through Worker.run_one()."""

import gc
import re
import threading
import types
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.db.models.functions import Now

from jobs import registry
from jobs.models import Attempt, Job, OutboxMessage, State
from jobs.services import job_admit, job_cancel, jobs_claim_batch
from jobs.worker import JobContext, Worker, WorkerStopping
from tests.helpers import wait_for


def admit(workspace, kind, payload=None):
    job, _ = job_admit(workspace_id=workspace.pk, kind=kind, payload=payload or {})
    return job


def make_due(job):
    Job.objects.filter(pk=job.pk).update(run_after=Now() - timedelta(seconds=1))


def test_run_one_returns_false_when_queue_is_empty(db):
    assert Worker(worker_id="w").run_one() is False


def test_run_one_completes_a_noop_job(workspace):
    job = admit(workspace, "noop")
    assert Worker(worker_id="w").run_one() is True
    job.refresh_from_db()
    assert (job.state, job.output, job.attempt) == (State.COMPLETED, {"ok": True}, 1)


def test_poison_job_needs_attention_after_max_attempts(workspace, settings, monkeypatch):
    settings.JOB_MAX_ATTEMPTS = 3
    settings.JOB_BACKOFF_BASE_SECONDS = 1
    settings.JOB_BACKOFF_MAX_SECONDS = 3
    # Full jitter may draw a wait of a few milliseconds, and the job would be due at once: the
    # draw that takes nothing off the ceiling makes "not due yet" certain.
    monkeypatch.setattr("jobs.backoff.random", types.SimpleNamespace(random=lambda: 0.0))
    job = admit(workspace, "fail", {"message": "provider returned 503"})
    worker = Worker(worker_id="w")
    for attempt in range(1, 4):
        assert worker.run_one() is True
        job.refresh_from_db()
        if attempt < 3:
            assert job.state == State.RETRYING
            delay = (job.run_after - job.state_changed_at).total_seconds()
            assert min(3, 1 * 2 ** (attempt - 1)) - 0.01 <= delay <= min(3, 1 * 2 ** (attempt - 1)) + 0.01
            assert worker.run_one() is False  # not due yet
            make_due(job)
    assert job.state == State.NEEDS_ATTENTION
    # Members read a reference; staff read the exception on the attempt.
    assert re.fullmatch(r"gave up after 3 attempts: internal error, reference [0-9a-f]{8}", job.reason)
    reference = job.reason.rsplit(" ", 1)[1]
    last = Attempt.objects.get(job=job, number=3)
    assert last.error == f"reference {reference}: RuntimeError: provider returned 503"
    assert list(Attempt.objects.filter(job=job).values_list("outcome", flat=True)) == [
        "retry",
        "retry",
        "failed",
    ]


def test_permanent_error_needs_attention_without_retry(workspace):
    job = admit(workspace, "fail", {"message": "unreadable sheet", "permanent": True})
    Worker(worker_id="w").run_one()
    job.refresh_from_db()
    assert (job.state, job.reason, job.attempt) == (State.NEEDS_ATTENTION, "unreadable sheet", 1)


def test_job_of_a_kind_without_handler_is_not_claimed(workspace):
    unknown = admit(workspace, "no-such-kind")
    known = admit(workspace, "noop")
    worker = Worker(worker_id="w")
    assert worker.run_one() is True
    assert worker.run_one() is False
    unknown.refresh_from_db()
    assert (unknown.state, unknown.attempt) == (State.QUEUED, 0)
    assert not Attempt.objects.filter(job=unknown).exists()
    assert Job.objects.get(pk=known.pk).state == State.COMPLETED


def test_claim_of_a_kind_that_lost_its_handler_needs_attention(workspace):
    job = admit(workspace, "no-such-kind")
    worker = Worker(worker_id="w")
    worker.kinds = ["no-such-kind"]  # registered when claimed, gone when run
    worker.run_one()
    job.refresh_from_db()
    assert job.state == State.NEEDS_ATTENTION
    assert "no handler is registered for job kind 'no-such-kind'" in job.reason


def test_worker_goes_on_after_a_failing_job(workspace):
    bad = admit(workspace, "fail", {"permanent": True})
    good = admit(workspace, "noop")
    worker = Worker(worker_id="w")
    while worker.run_one():
        pass
    assert Job.objects.get(pk=bad.pk).state == State.NEEDS_ATTENTION
    assert Job.objects.get(pk=good.pk).state == State.COMPLETED


def test_stopping_worker_claims_nothing(workspace):
    job = admit(workspace, "noop")
    worker = Worker(worker_id="w")
    worker.stop()
    assert worker.run_one() is False
    job.refresh_from_db()
    assert (job.state, job.attempt) == (State.QUEUED, 0)


@pytest.mark.django_db(transaction=True)
def test_stopping_worker_releases_a_cooperative_job_at_its_check_in(workspace):
    job = admit(workspace, "sleep", {"seconds": 30, "cooperative": True})
    worker = Worker(worker_id="w")

    def run_one_in_thread():
        try:
            worker.run_one()
        finally:
            connection.close()

    runner = threading.Thread(target=run_one_in_thread)
    runner.start()
    try:
        wait_for(
            lambda: Job.objects.filter(pk=job.pk, state=State.RUNNING).exists(), message="the job to start"
        )
        worker.stop()
        runner.join(10)
    finally:
        worker.stop()
        runner.join(10)
    job.refresh_from_db()
    assert job.state == State.RETRYING
    assert Attempt.objects.get(job=job).outcome == "released"


def test_progress_heartbeat_of_a_stopping_worker_does_not_interrupt(workspace):
    admit(workspace, "noop")
    worker = Worker(worker_id="w")
    [claim] = jobs_claim_batch(worker_id="w", limit=1)
    ctx = JobContext(claim, worker)
    worker.stop()
    ctx.heartbeat(1, 1)  # output in hand: no WorkerStopping
    assert ctx.accept({"ok": True}) == State.COMPLETED
    with pytest.raises(WorkerStopping):
        JobContext(claim, worker).check()


def test_prefetching_worker_runs_every_claimed_job(workspace):
    jobs = [admit(workspace, "noop") for _ in range(7)]
    worker = Worker(worker_id="w", prefetch=3)
    runs = 0
    while worker.run_one():
        runs += 1
    assert runs == 7
    assert Job.objects.filter(pk__in=[j.pk for j in jobs], state=State.COMPLETED).count() == 7
    assert set(Attempt.objects.values_list("number", "outcome")) == {(1, "succeeded")}


def test_stopping_worker_releases_prefetched_jobs_it_never_started(workspace):
    for _ in range(3):
        admit(workspace, "noop")
    worker = Worker(worker_id="w", prefetch=3)
    assert worker.run_one() is True  # claims three, runs the first
    worker.stop()
    worker.release_claimed(worker._claimed)
    states = sorted(Job.objects.values_list("state", flat=True))
    assert states == [State.COMPLETED, State.RETRYING, State.RETRYING]
    assert sorted(Attempt.objects.values_list("outcome", flat=True)) == ["released", "released", "succeeded"]


def _running_for(worker_id):
    return set(Job.objects.filter(state=State.RUNNING, worker_id=worker_id).values_list("pk", flat=True))


def test_default_claim_takes_one_job_of_a_kind_it_has_not_run(workspace):
    for _ in range(3):
        admit(workspace, "noop")
    worker = Worker(worker_id="w")
    assert worker.run_one() is True
    assert sorted(Job.objects.values_list("state", flat=True)) == [
        State.COMPLETED,
        State.QUEUED,
        State.QUEUED,
    ]


def test_default_claim_prefetches_a_kind_this_worker_runs_fast(workspace, settings):
    settings.JOB_PREFETCH_MAX = 4
    worker = Worker(worker_id="w")
    admit(workspace, "noop")
    assert worker.run_one() is True  # learns that noop takes milliseconds
    later = [admit(workspace, "noop") for _ in range(6)]
    assert worker.run_one() is True  # claims four, runs the first
    assert Job.objects.filter(pk__in=[j.pk for j in later], worker_id="w").count() == 4
    assert Job.objects.filter(pk__in=[j.pk for j in later], state=State.QUEUED).count() == 2
    while worker.run_one():
        pass
    assert Job.objects.filter(state=State.COMPLETED).count() == 7
    assert set(Attempt.objects.values_list("number", "outcome")) == {(1, "succeeded")}


def test_a_long_job_is_never_prefetched(workspace, settings):
    """A busy worker never holds a long job: a free worker can take it at once."""
    settings.JOB_PREFETCH_MAX = 10
    worker = Worker(worker_id="busy")
    admit(workspace, "noop")
    worker.run_one()  # noop is short for this worker; sleep was never run: long
    first = admit(workspace, "noop")
    long_job = admit(workspace, "sleep", {"seconds": 0})
    rest = [admit(workspace, "noop") for _ in range(3)]
    worker.run_one()  # runs the first noop, holds the other three
    assert _running_for("busy") == {first.pk, *(j.pk for j in rest)}
    long_job.refresh_from_db()
    assert long_job.state == State.QUEUED
    other = Worker(worker_id="free", prefetch=1)
    assert other.run_one() is True
    long_job.refresh_from_db()
    assert (long_job.state, long_job.worker_id) == (State.COMPLETED, "free")


def test_the_oldest_job_is_claimed_first_even_when_it_is_long(workspace, settings):
    worker = Worker(worker_id="w")
    admit(workspace, "noop")
    worker.run_one()
    long_job = admit(workspace, "sleep", {"seconds": 0})
    for _ in range(3):
        admit(workspace, "noop")
    assert worker.run_one() is True
    long_job.refresh_from_db()
    assert long_job.state == State.COMPLETED
    assert Job.objects.filter(state=State.QUEUED).count() == 3  # nothing prefetched with it


def test_run_times_mark_only_fast_kinds_short():
    from jobs.worker import RunTimes

    times = RunTimes(short_seconds=0.05)
    times.observe("noop", 0.001)
    times.observe("parse", 2.0)
    assert times.short_kinds({"noop", "parse", "never-run"}) == {"noop"}
    for _ in range(20):
        times.observe("noop", 1.0)  # it became slow: no longer prefetched
    assert not times.is_short("noop")


def test_a_group_of_short_jobs_is_accepted_in_one_statement(workspace, settings, django_assert_num_queries):
    settings.JOB_PREFETCH_MAX = 5
    worker = Worker(worker_id="w")
    admit(workspace, "noop")
    worker.run_one()
    for _ in range(5):
        admit(workspace, "noop")
    for _ in range(4):
        worker.run_one()
    assert Job.objects.filter(state=State.COMPLETED).count() == 1  # four run, none accepted yet
    with django_assert_num_queries(1):
        worker.run_one()  # the fifth, then the group's one accept
    assert Job.objects.filter(state=State.COMPLETED).count() == 6
    assert set(Attempt.objects.values_list("outcome", flat=True)) == {"succeeded"}
    topics = list(OutboxMessage.objects.filter(topic="job.completed").values_list("payload", flat=True))
    assert len(topics) == 6 and {p["state"] for p in topics} == {"completed"}


def test_a_group_member_that_lost_its_lease_is_not_accepted(workspace, settings):
    settings.JOB_PREFETCH_MAX = 3
    worker = Worker(worker_id="w")
    admit(workspace, "noop")
    worker.run_one()
    jobs = [admit(workspace, "noop") for _ in range(3)]
    worker.run_one()  # claims three, runs the first
    job_cancel(job_id=jobs[0].pk)  # its fence goes while its output waits
    while worker.run_one():
        pass
    states = dict(Job.objects.filter(pk__in=[j.pk for j in jobs]).values_list("pk", "state"))
    assert states == {jobs[0].pk: State.CANCELLED, jobs[1].pk: State.COMPLETED, jobs[2].pk: State.COMPLETED}
    assert Attempt.objects.get(job_id=jobs[0].pk).outcome == "cancelled"


@pytest.mark.django_db(transaction=True)
def test_a_lost_connection_retries_the_job_without_counting_the_attempt(workspace, settings):
    settings.JOB_MAX_ATTEMPTS = 2
    job = admit(workspace, "sleep", {"seconds": 1.5})

    def work():
        try:
            Worker(worker_id="w").run_one()
        finally:
            connections.close_all()

    thread = threading.Thread(target=work)
    thread.start()
    wait_for(
        lambda: Job.objects.filter(pk=job.pk, state=State.RUNNING).exists(), timeout=20, message="the claim"
    )
    with connection.cursor() as cursor:  # the worker's session ends while its job sleeps
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    thread.join(30)
    job.refresh_from_db()
    assert (job.state, job.attempt, job.max_attempts) == (State.RETRYING, 1, 3)
    assert "interrupted" in job.reason and "not counted" in job.reason


def test_warm_up_runs_each_kinds_warm_up_once_and_survives_a_failing_one(db, caplog):
    calls = []

    def broken():
        calls.append("broken")
        raise OSError("no room for a process")

    registry.register("warm", warm_up=lambda: calls.append("warm"))(lambda ctx: None)
    registry.register("broken-warm", warm_up=broken)(lambda ctx: None)
    try:
        Worker(worker_id="w").warm_up()
    finally:
        registry.unregister("warm")
        registry.unregister("broken-warm")
    assert sorted(calls) == ["broken", "warm"]
    assert "warming up job kind broken-warm failed" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_a_worker_leaves_what_start_up_made_out_of_garbage_collection():
    gc.unfreeze()
    try:
        Worker(worker_id="w", burst=True).run()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
