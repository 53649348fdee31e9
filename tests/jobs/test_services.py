"""The state machine, one behaviour per test, against real PostgreSQL."""

import threading
import uuid
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.db.models import F
from django.db.models.functions import Now

from jobs.backoff import backoff_seconds
from jobs.models import Attempt, Job, JobCheckpoint, OutboxMessage, State
from jobs.signals import job_staged_for_review
from django.db import transaction
from tests.helpers import wait_for
from jobs.services import (
    attempt_record_stale,
    IdempotencyConflict,
    InvalidTransition,
    LeaseLost,
    VersionConflict,
    job_accept_output,
    job_admit,
    job_approve,
    job_cancel,
    job_checkpoint,
    job_claim_next,
    job_fail,
    job_heartbeat,
    job_reject,
    job_release,
    job_retry,
    job_review_edit,
    jobs_accept_outputs,
    jobs_admit_many,
    jobs_claim_batch,
    NOTIFY_CHANNEL,
    jobs_expire_leases,
)


def admit(workspace, kind="noop", key=None, payload=None):
    job, _ = job_admit(
        workspace_id=workspace.pk, kind=kind, payload=payload or {}, idempotency_key=key, fingerprint="f"
    )
    return job


def expire(job_id):
    Job.objects.filter(pk=job_id).update(lease_until=Now() - timedelta(seconds=1))


def test_admit_creates_queued_job_with_outbox_message(workspace):
    job = admit(workspace)
    assert job.state == State.QUEUED
    assert job.attempt == 0
    assert OutboxMessage.objects.filter(topic="job.accepted", payload__job_id=str(job.pk)).count() == 1


def test_admit_same_key_same_request_returns_same_job(workspace):
    first, created = job_admit(
        workspace_id=workspace.pk, kind="noop", payload={}, idempotency_key="k1", fingerprint="abc"
    )
    second, created_again = job_admit(
        workspace_id=workspace.pk, kind="noop", payload={}, idempotency_key="k1", fingerprint="abc"
    )
    assert (created, created_again) == (True, False)
    assert second.pk == first.pk
    assert Job.objects.count() == 1


def test_admit_same_key_other_request_conflicts(workspace):
    job_admit(workspace_id=workspace.pk, kind="noop", payload={}, idempotency_key="k1", fingerprint="abc")
    with pytest.raises(IdempotencyConflict):
        job_admit(
            workspace_id=workspace.pk, kind="noop", payload={}, idempotency_key="k1", fingerprint="other"
        )


def test_idempotency_keys_are_scoped_to_the_workspace(workspace, other_workspace):
    a = admit(workspace, key="shared")
    b = admit(other_workspace, key="shared")
    assert a.pk != b.pk


def test_claim_sets_fresh_token_attempt_and_database_lease(workspace, settings):
    settings.JOB_LEASE_SECONDS = 30
    job = admit(workspace)
    claim = job_claim_next(worker_id="w1")
    job.refresh_from_db()
    assert claim.job_id == job.pk
    assert (job.state, job.attempt, job.lease_token) == (State.RUNNING, 1, claim.token)
    with connection.cursor() as cursor:
        cursor.execute("SELECT EXTRACT(EPOCH FROM lease_until - clock_timestamp()) FROM jobs_job")
        remaining = float(cursor.fetchone()[0])
    assert 25 < remaining <= 30
    attempt = Attempt.objects.get(job=job)
    assert (attempt.number, attempt.lease_token, attempt.outcome) == (1, claim.token, "running")


def test_claim_returns_none_when_nothing_is_claimable(workspace):
    job = admit(workspace)
    Job.objects.filter(pk=job.pk).update(state=State.RETRYING, run_after=Now() + timedelta(hours=1))
    assert job_claim_next(worker_id="w1") is None


def test_accept_completes_and_publishes_in_the_same_transaction(workspace):
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    seen = []

    def publish(job):
        seen.append((job.state, connection.in_atomic_block))
        return {"revision_id": 7, "item_count": 3}

    state = job_accept_output(claim=claim, output={"items": []}, publish=publish)
    job = Job.objects.get(pk=claim.job_id)
    assert state == State.COMPLETED
    assert seen == [(State.COMPLETED, True)]
    assert job.result == {"revision_id": 7, "item_count": 3}
    assert job.lease_token is None
    assert Attempt.objects.get(job=job).outcome == "succeeded"


@pytest.mark.parametrize("grouped", [False, True], ids=["one", "group"])
def test_an_accept_for_review_tells_the_apps_above_once_committed(workspace, grouped):
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    heard = []

    def receiver(sender, *, job_id, version, output, **kwargs):
        job = Job.objects.get(pk=job_id)  # committed: another connection would see it too
        heard.append((job_id, version, output, job.state, job.version))
        raise RuntimeError("a failing receiver changes nothing")

    job_staged_for_review.connect(receiver)
    try:
        if grouped:
            states = jobs_accept_outputs(accepts=[(claim, {"n": 1}, True)])
            state = states[claim.job_id]
        else:
            state = job_accept_output(claim=claim, output={"n": 1}, needs_review=True)
    finally:
        job_staged_for_review.disconnect(receiver)
    job = Job.objects.get(pk=claim.job_id)
    assert state == State.AWAITING_REVIEW
    assert heard == [(claim.job_id, job.version, {"n": 1}, State.AWAITING_REVIEW, job.version)]


def test_accepts_in_one_statement_each_write_their_own_output_under_their_own_fence(workspace):
    for key in "abc":
        admit(workspace, key=key)
    claims = jobs_claim_batch(worker_id="w1", limit=3)
    expire(claims[1].job_id)
    outputs = [{"n": 0, "text": 'a "quoted" \\ value'}, {"n": 1}, [2, None]]
    reviews = [False, False, True]
    states = jobs_accept_outputs(accepts=list(zip(claims, outputs, reviews, strict=True)))
    assert states == {claims[0].job_id: State.COMPLETED, claims[2].job_id: State.AWAITING_REVIEW}
    stored = dict(Job.objects.values_list("id", "output"))
    assert stored == {claims[0].job_id: outputs[0], claims[1].job_id: None, claims[2].job_id: outputs[2]}


def test_an_accept_without_review_sends_nothing(workspace):
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    heard = []

    def receiver(sender, **kwargs):
        heard.append(kwargs["job_id"])

    job_staged_for_review.connect(receiver)
    try:
        assert job_accept_output(claim=claim, output={}) == State.COMPLETED
    finally:
        job_staged_for_review.disconnect(receiver)
    assert heard == []


def test_accept_after_lease_expiry_affects_zero_rows(workspace):
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    expire(claim.job_id)
    published = []
    with pytest.raises(LeaseLost):
        job_accept_output(claim=claim, output={}, publish=lambda job: published.append(job))
    assert published == []
    assert Job.objects.get(pk=claim.job_id).state == State.RUNNING


def test_stale_worker_completion_affects_zero_rows(workspace):
    admit(workspace)
    stale = job_claim_next(worker_id="a")
    expire(stale.job_id)
    assert jobs_expire_leases() == [(stale.job_id, State.RETRYING)]
    Job.objects.filter(pk=stale.job_id).update(run_after=Now())  # past its backoff
    current = job_claim_next(worker_id="b")
    assert current.attempt == 2
    job_accept_output(claim=current, output={"by": "b"})
    with pytest.raises(LeaseLost):
        job_accept_output(claim=stale, output={"by": "a"})
    job = Job.objects.get(pk=stale.job_id)
    assert (job.state, job.output) == (State.COMPLETED, {"by": "b"})


def test_a_stale_result_keeps_the_time_its_attempt_was_taken_back(workspace):
    """The attempt ended when the scanner took its lease back; the stale
    result that comes later is its diagnostic and leaves that time."""
    admit(workspace)
    stale = job_claim_next(worker_id="a")
    expire(stale.job_id)
    jobs_expire_leases()
    taken_back = Attempt.objects.get(job_id=stale.job_id, number=1).finished_at
    assert taken_back is not None
    attempt_record_stale(claim=stale, diagnostic={"rejected": "accept"})
    attempt = Attempt.objects.get(job_id=stale.job_id, number=1)
    assert (attempt.outcome, attempt.finished_at) == (Attempt.Outcome.STALE, taken_back)


def test_repeated_accept_after_completion_writes_nothing(workspace):
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    calls = []
    job_accept_output(claim=claim, output={"n": 1}, publish=lambda job: calls.append(1) or {})
    with pytest.raises(LeaseLost):
        job_accept_output(claim=claim, output={"n": 2}, publish=lambda job: calls.append(2) or {})
    assert calls == [1]
    assert job_claim_next(worker_id="w2") is None
    assert Job.objects.get(pk=claim.job_id).output == {"n": 1}


def test_accept_with_flags_goes_to_review_and_publishes_nothing(workspace):
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    published = []
    state = job_accept_output(
        claim=claim, output={"items": [1]}, needs_review=True, publish=lambda job: published.append(job)
    )
    assert state == State.AWAITING_REVIEW
    assert published == []
    assert Job.objects.get(pk=claim.job_id).review_required is True


def test_once_flagged_later_attempts_go_to_review_too(workspace):
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    job_accept_output(claim=claim, output={"items": []}, needs_review=True)
    job_reject(
        job_id=claim.job_id,
        expected_version=Job.objects.get(pk=claim.job_id).version,
        reason="wrong supplier",
    )
    job_retry(job_id=claim.job_id)
    again = job_claim_next(worker_id="w2")
    published = []
    state = job_accept_output(
        claim=again, output={"items": []}, needs_review=False, publish=lambda job: published.append(job)
    )
    assert state == State.AWAITING_REVIEW
    assert published == []


def test_heartbeat_extends_lease_and_stores_progress(workspace):
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    Job.objects.filter(pk=claim.job_id).update(lease_until=Now() + timedelta(seconds=1))
    job_heartbeat(claim=claim, done=3, total=10)
    job = Job.objects.get(pk=claim.job_id)
    assert (job.progress_done, job.progress_total) == (3, 10)
    assert Job.objects.filter(pk=job.pk, lease_until__gt=Now() + timedelta(seconds=5)).exists()


def test_heartbeat_after_expiry_is_refused(workspace):
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    expire(claim.job_id)
    with pytest.raises(LeaseLost):
        job_heartbeat(claim=claim)


def test_checkpoint_is_fenced(workspace):
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    job_checkpoint(claim=claim, name="table", data={"rows": 1})
    expire(claim.job_id)
    with pytest.raises(LeaseLost):
        job_checkpoint(claim=claim, name="table", data={"rows": 2})
    assert JobCheckpoint.objects.get(job_id=claim.job_id, name="table").data == {"rows": 1}


def test_a_large_checkpoint_is_compressed_with_lz4_where_the_server_offers_it(workspace):
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    job_checkpoint(claim=claim, name="table", data={"rows": [[str(i), "steel"] for i in range(5000)]})
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
        )
        offered = cursor.fetchone()[0]
        cursor.execute("SELECT pg_column_compression(data) FROM jobs_jobcheckpoint WHERE name = 'table'")
        assert cursor.fetchone()[0] == ("lz4" if offered else "pglz")


def test_transient_failure_retries_with_backoff(workspace, settings):
    settings.JOB_BACKOFF_BASE_SECONDS = 10
    settings.JOB_BACKOFF_MAX_SECONDS = 15
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    assert job_fail(claim=claim, error="timeout", transient=True) == State.RETRYING
    job = Job.objects.get(pk=claim.job_id)
    assert job.lease_token is None
    delay = (job.run_after - job.state_changed_at).total_seconds()
    assert 0 <= delay <= 10.01
    assert "timeout" in job.reason
    assert Attempt.objects.get(job=job).outcome == "retry"


def test_permanent_failure_needs_attention_at_once(workspace):
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    assert job_fail(claim=claim, error="not a spreadsheet", transient=False) == State.NEEDS_ATTENTION
    job = Job.objects.get(pk=claim.job_id)
    assert job.reason == "not a spreadsheet"
    assert OutboxMessage.objects.filter(topic="job.needs_attention").count() == 1


def test_backoff_stays_within_full_jitter_bounds():
    for attempt in range(1, 12):
        ceiling = min(60, 2 * 2 ** (attempt - 1))
        samples = [backoff_seconds(attempt, base=2, cap=60) for _ in range(200)]
        assert all(0 <= s <= ceiling for s in samples)
        assert max(samples) > ceiling / 2  # jitter spreads over the whole range
        assert min(samples) < ceiling / 2


def test_equal_jitter_keeps_at_least_half_the_ceiling():
    samples = [backoff_seconds(3, base=10, cap=60, jitter=0.5) for _ in range(200)]
    assert all(20 <= s <= 40 for s in samples)


def test_expired_leases_wait_their_own_backoff_from_database_time(workspace, settings):
    settings.JOB_BACKOFF_BASE_SECONDS = 100
    settings.JOB_BACKOFF_MAX_SECONDS = 100
    for _ in range(8):
        admit(workspace)
    claims = [job_claim_next(worker_id="w1") for _ in range(8)]
    for claim in claims:
        expire(claim.job_id)
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        before = cursor.fetchone()[0]
    assert len(jobs_expire_leases()) == 8
    delays = [
        (run_after - before).total_seconds()
        for run_after in Job.objects.filter(pk__in=[c.job_id for c in claims]).values_list(
            "run_after", flat=True
        )
    ]
    assert all(0 <= d <= 101 for d in delays)
    assert len({round(d, 3) for d in delays}) > 1  # each its own jitter


def test_expire_moves_last_attempt_to_needs_attention(workspace, settings):
    settings.JOB_MAX_ATTEMPTS = 1
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    expire(claim.job_id)
    assert jobs_expire_leases() == [(claim.job_id, State.NEEDS_ATTENTION)]
    assert Attempt.objects.get(job_id=claim.job_id).outcome == "expired"


def test_expire_leaves_unexpired_leases_alone(workspace):
    admit(workspace)
    job_claim_next(worker_id="w1")
    assert jobs_expire_leases() == []


def test_lease_extended_just_before_the_scan_is_not_expired(workspace):
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    Job.objects.filter(pk=claim.job_id).update(lease_until=Now() + timedelta(milliseconds=300))
    job_heartbeat(claim=claim)
    assert jobs_expire_leases() == []
    assert Job.objects.get(pk=claim.job_id).state == State.RUNNING


def test_expire_works_in_bounded_batches(workspace):
    jobs_admit_many(workspace_id=workspace.pk, kind="noop", count=5)
    for _ in range(5):
        job_claim_next(worker_id="w1")
    Job.objects.update(lease_until=Now() - timedelta(seconds=1))
    moved = jobs_expire_leases(batch_size=2, max_batches=2)
    assert len(moved) == 4
    assert Job.objects.filter(state=State.RUNNING).count() == 1


def test_cancel_clears_token_so_running_worker_cannot_accept(workspace):
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    job_cancel(job_id=claim.job_id, by_label="mia")
    with pytest.raises(LeaseLost):
        job_accept_output(claim=claim, output={})
    job = Job.objects.get(pk=claim.job_id)
    assert (job.state, job.lease_token) == (State.CANCELLED, None)
    assert Attempt.objects.get(job=job).outcome == "cancelled"


def test_cancel_of_completed_job_is_invalid(workspace):
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    job_accept_output(claim=claim, output={})
    with pytest.raises(InvalidTransition):
        job_cancel(job_id=claim.job_id)


def test_cancel_with_stale_version_conflicts(workspace):
    job = admit(workspace)
    with pytest.raises(VersionConflict):
        job_cancel(job_id=job.pk, expected_version=job.version + 5)
    assert Job.objects.get(pk=job.pk).state == State.QUEUED


def test_cancel_of_unknown_job_raises_does_not_exist(db):
    with pytest.raises(Job.DoesNotExist):
        job_cancel(job_id=uuid.uuid4())


def test_retry_gives_fresh_budget_and_keeps_history(workspace, settings):
    settings.JOB_MAX_ATTEMPTS = 2
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    job_fail(claim=claim, error="bad", transient=False)
    job_retry(job_id=claim.job_id, by_label="staff")
    job = Job.objects.get(pk=claim.job_id)
    assert (job.state, job.attempt, job.max_attempts) == (State.QUEUED, 1, 3)
    again = job_claim_next(worker_id="w1")
    assert again.attempt == 2
    assert list(Attempt.objects.filter(job=job).values_list("number", "outcome")) == [
        (1, "failed"),
        (2, "running"),
    ]


def test_retry_of_running_job_is_invalid(workspace):
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    with pytest.raises(InvalidTransition):
        job_retry(job_id=claim.job_id)


def test_release_returns_job_without_spending_budget(workspace):
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    before = Job.objects.get(pk=claim.job_id).max_attempts
    job_release(claim=claim)
    job = Job.objects.get(pk=claim.job_id)
    assert (job.state, job.lease_token, job.max_attempts) == (State.RETRYING, None, before + 1)
    assert Attempt.objects.get(job=job).outcome == "released"
    assert job_claim_next(worker_id="w2").attempt == 2


def _awaiting_review(workspace):
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    job_accept_output(claim=claim, output={"items": ["x"]}, needs_review=True)
    return Job.objects.get(pk=claim.job_id)


def test_approve_publishes_at_the_seen_version(workspace):
    job = _awaiting_review(workspace)
    result = job_approve(
        job_id=job.pk,
        expected_version=job.version,
        output={"items": ["y"]},
        publish=lambda j: {"item_count": len(j.output["items"])},
    )
    job.refresh_from_db()
    assert (job.state, job.result, result) == (State.COMPLETED, {"item_count": 1}, {"item_count": 1})


def test_stale_approval_publishes_nothing(workspace):
    job = _awaiting_review(workspace)
    job_review_edit(job_id=job.pk, expected_version=job.version, output={"items": ["edited"]})
    published = []
    with pytest.raises(VersionConflict):
        job_approve(
            job_id=job.pk,
            expected_version=job.version,
            output={"items": []},
            publish=lambda j: published.append(j),
        )
    assert published == []
    assert Job.objects.get(pk=job.pk).state == State.AWAITING_REVIEW


def test_time_is_accounted_per_phase(workspace):
    job = admit(workspace)
    Job.objects.filter(pk=job.pk).update(state_changed_at=F("state_changed_at") - timedelta(seconds=5))
    claim = job_claim_next(worker_id="w1")
    Job.objects.filter(pk=job.pk).update(state_changed_at=F("state_changed_at") - timedelta(seconds=2))
    job_accept_output(claim=claim, output={}, needs_review=True)
    job = Job.objects.get(pk=job.pk)
    assert 5 <= job.waiting_seconds < 6
    assert 2 <= job.running_seconds < 3
    assert job.review_seconds == 0


@pytest.mark.django_db(transaction=True)
def test_concurrent_claimers_claim_each_job_exactly_once(workspace):
    jobs_admit_many(workspace_id=workspace.pk, kind="noop", count=500)
    claims = []
    lock = threading.Lock()

    def claimer(n):
        try:
            while (claim := job_claim_next(worker_id=f"t{n}")) is not None:
                job_accept_output(claim=claim, output={"by": n})
                with lock:
                    claims.append(claim)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=claimer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(claims) == 500
    assert len({c.job_id for c in claims}) == 500
    assert len({c.token for c in claims}) == 500
    assert {c.attempt for c in claims} == {1}
    assert Job.objects.filter(state=State.COMPLETED).count() == 500
    assert Attempt.objects.count() == 500


@pytest.mark.django_db(transaction=True)
def test_concurrent_admissions_with_one_key_create_one_job(workspace):
    barrier = threading.Barrier(8)
    results = []

    def admitter():
        try:
            barrier.wait()
            job, created = job_admit(
                workspace_id=workspace.pk,
                kind="noop",
                payload={},
                idempotency_key="same-key",
                fingerprint="same",
            )
            results.append((job.pk, created))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=admitter) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 8
    assert len({job_id for job_id, _ in results}) == 1
    assert sum(created for _, created in results) == 1
    assert Job.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_scan_skips_a_row_whose_heartbeat_is_in_flight(workspace):
    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    Job.objects.filter(pk=claim.job_id).update(lease_until=Now() + timedelta(milliseconds=200))
    locked = threading.Event()
    release = threading.Event()

    def heartbeat_in_open_transaction():
        from django.db import transaction

        try:
            with transaction.atomic():
                job_heartbeat(claim=claim)
                locked.set()
                release.wait(10)
        finally:
            connections.close_all()

    thread = threading.Thread(target=heartbeat_in_open_transaction)
    thread.start()
    assert locked.wait(10)
    # The committed lease (what the scanner's snapshot sees) is now past.
    wait_for(
        lambda: Job.objects.filter(pk=claim.job_id, lease_until__lt=Now()).exists(),
        timeout=5,
        message="the committed lease to pass",
    )
    assert jobs_expire_leases() == []
    release.set()
    thread.join()
    assert jobs_expire_leases() == []
    assert Job.objects.get(pk=claim.job_id).state == State.RUNNING


def test_batch_claim_gives_each_job_its_own_token_attempt_and_row(workspace):
    jobs_admit_many(workspace_id=workspace.pk, kind="noop", count=5)
    claims = jobs_claim_batch(worker_id="w1", limit=3)
    assert len(claims) == 3
    assert len({c.token for c in claims}) == 3
    assert {c.attempt for c in claims} == {1}
    for claim in claims:
        job = Job.objects.get(pk=claim.job_id)
        assert (job.state, job.lease_token) == (State.RUNNING, claim.token)
        assert Attempt.objects.get(job=job).lease_token == claim.token
    assert Job.objects.filter(state=State.QUEUED).count() == 2


def test_expired_lease_waits_a_jittered_backoff_before_the_next_claim(workspace, settings):
    settings.JOB_BACKOFF_BASE_SECONDS = 100
    settings.JOB_BACKOFF_MAX_SECONDS = 1000
    jobs_admit_many(workspace_id=workspace.pk, kind="noop", count=20)
    for _ in range(20):
        job_claim_next(worker_id="w1")
    Job.objects.update(lease_until=Now() - timedelta(seconds=1))

    assert len(jobs_expire_leases()) == 20

    delays = [
        (run_after - changed).total_seconds()
        for run_after, changed in Job.objects.values_list("run_after", "state_changed_at")
    ]
    # Full jitter over [0, base * 2^(attempt - 1)] = [0, 100] for attempt 1.
    assert all(0 <= delay <= 100.01 for delay in delays)
    assert len({round(delay, 3) for delay in delays}) > 10


@pytest.mark.django_db(transaction=True)
def test_admission_wakes_workers_only_once_committed(workspace):
    """NOTIFY goes out after the commit, in its own transaction: a rolled-back
    admission wakes nobody, a committed one does."""
    import psycopg
    from django.test.utils import CaptureQueriesContext

    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    listener = psycopg.connect(**params, autocommit=True)
    try:
        listener.execute(f"LISTEN {NOTIFY_CHANNEL}")

        class RolledBack(Exception):
            pass

        with pytest.raises(RolledBack), transaction.atomic():
            admit(workspace, key="rolled-back")
            raise RolledBack
        assert list(listener.notifies(timeout=0.5, stop_after=1)) == []

        with CaptureQueriesContext(connection) as queries, transaction.atomic():
            admit(workspace, key="committed")
            before_commit = len(queries.captured_queries)
        sent = ["pg_notify" in q["sql"] for q in queries.captured_queries]
        assert not any(sent[:before_commit]) and any(sent[before_commit:])  # after, not inside
        heard = list(listener.notifies(timeout=10, stop_after=1))
        assert [(n.channel, n.payload) for n in heard] == [(NOTIFY_CHANNEL, "noop")]
    finally:
        listener.close()


# --- one definition per transition -------------------------------------------------------


def _in_state_for(job_id, seconds: float) -> None:
    """Put the job's current state `seconds` in the past (database time)."""
    Job.objects.filter(pk=job_id).update(state_changed_at=Now() - timedelta(seconds=seconds))


def test_each_phase_is_accounted_by_the_transition_that_leaves_it_sql_or_orm(workspace):
    job = admit(workspace)
    _in_state_for(job.pk, 100)
    claim = job_claim_next(worker_id="w1")  # the claim statement leaves `queued`
    _in_state_for(job.pk, 20)
    job_accept_output(claim=claim, output={}, needs_review=True)  # the accept statement leaves `running`
    _in_state_for(job.pk, 3)
    version = Job.objects.get(pk=job.pk).version
    job_reject(job_id=job.pk, expected_version=version, reason="no")  # an ORM UPDATE leaves review
    _in_state_for(job.pk, 50)
    job_retry(job_id=job.pk)  # leaves needs_attention: no phase counts it
    timed = Job.objects.get(pk=job.pk)
    assert timed.waiting_seconds == pytest.approx(100, abs=2)
    assert timed.running_seconds == pytest.approx(20, abs=2)
    assert timed.review_seconds == pytest.approx(3, abs=2)
    assert timed.version == version + 2


def test_job_events_carry_the_same_members_from_sql_and_from_python(workspace, settings):
    settings.JOB_MAX_ATTEMPTS = 1
    accepted, failed = admit(workspace), admit(workspace, key="b")
    first, second = job_claim_next(worker_id="w1"), job_claim_next(worker_id="w1")
    by_job = {first.job_id: first, second.job_id: second}
    jobs_accept_outputs(accepts=[(by_job[accepted.pk], {"n": 1}, False)])  # built in SQL
    job_fail(claim=by_job[failed.pk], error="boom", transient=True)  # built in Python
    done = OutboxMessage.objects.get(topic="job.completed").payload
    attention = OutboxMessage.objects.get(topic="job.needs_attention").payload
    admitted = OutboxMessage.objects.filter(topic="job.accepted").first().payload
    assert done == {
        "job_id": str(accepted.pk),
        "kind": "noop",
        "state": "completed",
        "attempt": 1,
        "result": None,
    }
    assert attention == {
        "job_id": str(failed.pk),
        "kind": "noop",
        "state": "needs_attention",
        "attempt": 1,
        "reason": "boom",
    }
    assert set(admitted) == {"job_id", "kind", "state", "attempt"}


def _waiting_on_lock(table: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND query LIKE %s AND pid <> pg_backend_pid()",
            [f"%{table}%"],
        )
        return cursor.fetchone() is not None


@pytest.mark.django_db(transaction=True)
def test_lease_renewal_does_not_wait_behind_the_workers_own_checkpoint_write(workspace):
    import psycopg

    from tests.helpers import database_url

    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    errors = []

    def write_checkpoint():
        try:
            job_checkpoint(claim=claim, name="table", data={"rows": ["x" * 1000] * 100})
        except Exception as exc:  # noqa: BLE001  reported to the test
            errors.append(exc)
        finally:
            connection.close()

    with psycopg.connect(database_url()) as blocker:
        # Stall the checkpoint's data write (as a slow write of a large one
        # would be) by holding a lock that INSERTs into the table wait for.
        blocker.execute("LOCK TABLE jobs_jobcheckpoint IN SHARE MODE")
        writer = threading.Thread(target=write_checkpoint)
        writer.start()
        try:
            wait_for(lambda: _waiting_on_lock("jobs_jobcheckpoint"), message="the checkpoint write to wait")
            with connection.cursor() as cursor:
                cursor.execute("SET lock_timeout = '2s'")
            try:
                job_heartbeat(claim=claim)  # would wait behind the job's row lock
            finally:
                with connection.cursor() as cursor:
                    cursor.execute("RESET lock_timeout")
        finally:
            blocker.rollback()
            writer.join(30)
    assert errors == []
    assert JobCheckpoint.objects.get(job_id=claim.job_id, name="table").data["rows"][0] == "x" * 1000
    assert not JobCheckpoint.objects.filter(job_id=claim.job_id).exclude(name="table").exists()


@pytest.mark.django_db(transaction=True)
def test_recovery_ends_the_session_that_holds_a_long_expired_job_and_requeues_it(workspace, settings):
    import psycopg

    from jobs.services import jobs_end_stalled_sessions
    from tests.helpers import database_url

    settings.JOB_LEASE_SECONDS = 0.5
    admit(workspace)
    other = admit(workspace)
    claim = job_claim_next(worker_id="w1")
    Job.objects.filter(pk=claim.job_id).update(lease_until=Now() + timedelta(seconds=0.3))
    stalled = psycopg.connect(database_url())
    try:
        # A worker paused inside its transaction: it holds the job's row.
        stalled.execute("SELECT id FROM jobs_job WHERE id = %s FOR UPDATE", [claim.job_id])
        pid = stalled.info.backend_pid
        wait_for(
            lambda: Job.objects.filter(
                pk=claim.job_id, lease_until__lt=Now() - timedelta(seconds=1.1)
            ).exists(),
            message="the lease to have expired two leases ago",
        )
        assert jobs_expire_leases() == []  # SKIP LOCKED passes over the held row
        assert jobs_end_stalled_sessions(leases=2) == [(claim.job_id, pid)]
        with pytest.raises(psycopg.OperationalError):
            stalled.execute("SELECT 1")
    finally:
        stalled.close()
    assert jobs_expire_leases() == [(claim.job_id, State.RETRYING)]
    # A job whose row is not held is never a stalled session's.
    assert Job.objects.get(pk=other.pk).state == State.QUEUED


@pytest.mark.django_db(transaction=True)
def test_recovery_leaves_a_session_alone_while_the_lease_is_recent(workspace, settings):
    import psycopg

    from jobs.services import jobs_end_stalled_sessions
    from tests.helpers import database_url

    admit(workspace)
    claim = job_claim_next(worker_id="w1")
    expire(claim.job_id)  # expired one second ago: a lease of 60 s
    with psycopg.connect(database_url()) as holder:
        holder.execute("SELECT id FROM jobs_job WHERE id = %s FOR UPDATE", [claim.job_id])
        assert jobs_end_stalled_sessions(leases=2) == []
        assert holder.execute("SELECT 1").fetchone() == (1,)


def test_a_failure_not_charged_to_the_job_extends_its_budget_up_to_the_ceiling(workspace, settings):
    settings.JOB_MAX_TOTAL_ATTEMPTS = 7
    job = admit(workspace)
    Job.objects.filter(pk=job.pk).update(max_attempts=6)
    for number in (1, 2):
        Job.objects.filter(pk=job.pk).update(run_after=Now())
        claim = job_claim_next(worker_id="w1")
        assert claim.attempt == number
        assert job_fail(claim=claim, error="lock timeout", transient=True, charged=False) == State.RETRYING
    job.refresh_from_db()
    assert job.max_attempts == 7  # 6 + 1, then held at the ceiling
    assert "not counted" in job.reason
