"""Retention: `jobs_prune_finished` and `prunejobs`."""

import threading
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, connections
from django.db.models.functions import Now
from django.test.utils import CaptureQueriesContext

from catalog.models import CatalogRevision
from jobs.models import Attempt, Job, JobCheckpoint, OutboxMessage, State
from jobs.retention import jobs_prune_finished
from jobs.services import job_accept_output, job_admit, job_checkpoint, job_claim_next

OLD = timedelta(days=40)
RETENTION = timedelta(days=30)


def finished_job(workspace, *, state=State.COMPLETED, age=OLD):
    """A job run to the end through the services, then aged with .update()."""
    job, _ = job_admit(workspace_id=workspace.pk, kind="noop", payload={})
    claim = job_claim_next(worker_id="test")
    job_checkpoint(claim=claim, name="table", data={"rows": 1})
    job_accept_output(claim=claim, output={"ok": True})
    OutboxMessage.objects.filter(payload__job_id=str(job.pk)).update(delivered_at=Now())
    Job.objects.filter(pk=job.pk).update(state=state, finished_at=Now() - age)
    return job


def test_prune_removes_old_finished_jobs_with_attempts_checkpoints_and_outbox(workspace):
    jobs = [
        finished_job(workspace, state=state)
        for state in (State.COMPLETED, State.NEEDS_ATTENTION, State.CANCELLED)
    ]
    removed = jobs_prune_finished(older_than=RETENTION, batch_size=100)
    ids = [job.pk for job in jobs]
    assert removed == 3
    assert not Job.objects.filter(pk__in=ids).exists()
    assert not Attempt.objects.filter(job_id__in=ids).exists()
    assert not JobCheckpoint.objects.filter(job_id__in=ids).exists()
    assert not OutboxMessage.objects.filter(payload__job_id__in=[str(i) for i in ids]).exists()


def test_prune_keeps_recently_finished_jobs(workspace):
    recent = finished_job(workspace, age=timedelta(days=29))
    assert jobs_prune_finished(older_than=RETENTION, batch_size=100) == 0
    assert Job.objects.filter(pk=recent.pk).exists()
    assert Attempt.objects.filter(job=recent).count() == 1


@pytest.mark.parametrize("state", [State.QUEUED, State.RETRYING, State.AWAITING_REVIEW])
def test_prune_keeps_unfinished_jobs_however_old(workspace, state):
    job, _ = job_admit(workspace_id=workspace.pk, kind="noop", payload={})
    Job.objects.filter(pk=job.pk).update(state=state, created_at=Now() - OLD, finished_at=Now() - OLD)
    assert jobs_prune_finished(older_than=RETENTION, batch_size=100) == 0
    assert Job.objects.filter(pk=job.pk).exists()


def test_prune_keeps_running_jobs_and_their_attempts(workspace):
    job, _ = job_admit(workspace_id=workspace.pk, kind="noop", payload={})
    job_claim_next(worker_id="test")
    Job.objects.filter(pk=job.pk).update(created_at=Now() - OLD)
    assert jobs_prune_finished(older_than=timedelta(0), batch_size=100) == 0
    assert Attempt.objects.filter(job=job, outcome=Attempt.Outcome.RUNNING).exists()


def test_prune_keeps_jobs_with_a_catalog_revision(workspace):
    published = finished_job(workspace)
    CatalogRevision.objects.create(workspace=workspace, job=published, attempt=1, item_count=0, number=1)
    plain = finished_job(workspace)
    assert jobs_prune_finished(older_than=RETENTION, batch_size=100) == 1
    assert Job.objects.filter(pk=published.pk).exists()
    assert Attempt.objects.filter(job=published).count() == 1
    assert not Job.objects.filter(pk=plain.pk).exists()


def test_prune_keeps_pending_outbox_messages_and_those_of_kept_jobs(workspace):
    gone = finished_job(workspace)
    pending = OutboxMessage.objects.create(
        workspace=workspace, topic="job.completed", payload={"job_id": str(gone.pk)}
    )
    kept = finished_job(workspace, age=timedelta(days=1))
    jobs_prune_finished(older_than=RETENTION, batch_size=100)
    assert OutboxMessage.objects.filter(pk=pending.pk).exists()
    assert OutboxMessage.objects.filter(payload__job_id=str(kept.pk)).count() >= 2


def test_prune_works_in_batches_of_the_given_size(workspace):
    jobs = [finished_job(workspace) for _ in range(5)]
    with CaptureQueriesContext(connection) as captured:
        removed = jobs_prune_finished(older_than=RETENTION, batch_size=2)
    selects = [
        q["sql"]
        for q in captured.captured_queries
        if "SKIP LOCKED" in q["sql"] and '"jobs_job"' in q["sql"].split("FROM", 1)[1][:20]
    ]
    assert removed == 5
    assert not Job.objects.filter(pk__in=[job.pk for job in jobs]).exists()
    # completed: 2 + 2 + 1, then an empty batch; one empty batch for each other state
    assert len(selects) == 6
    assert all("LIMIT 2" in sql for sql in selects)


@pytest.mark.django_db(transaction=True)
def test_prune_skips_a_job_locked_by_another_transaction_without_waiting(workspace):
    locked, free = finished_job(workspace), finished_job(workspace)
    holding, release = threading.Event(), threading.Event()

    def hold_lock():
        other = connections.create_connection("default")
        try:
            with other.cursor() as cursor:
                cursor.execute("BEGIN")
                cursor.execute("SELECT 1 FROM jobs_job WHERE id = %s FOR UPDATE", [locked.pk])
                holding.set()
                release.wait(10)
                cursor.execute("ROLLBACK")
        finally:
            other.close()

    thread = threading.Thread(target=hold_lock)
    thread.start()
    try:
        assert holding.wait(10)
        with connection.cursor() as cursor:
            # Waiting on the lock would fail the prune instead of hanging the test.
            cursor.execute("SET lock_timeout = '2s'")
        removed = jobs_prune_finished(older_than=RETENTION, batch_size=100)
    finally:
        release.set()
        thread.join()
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
    assert removed == 1
    assert Job.objects.filter(pk=locked.pk).exists()
    assert not Job.objects.filter(pk=free.pk).exists()


def test_prunejobs_command_prints_how_many_were_removed(workspace):
    finished_job(workspace)
    finished_job(workspace)
    out = StringIO()
    call_command("prunejobs", "--older-than", "30", "--batch-size", "1", stdout=out)
    assert out.getvalue().strip() == "2 finished job(s) removed"


def test_prunejobs_refuses_a_negative_age(workspace):
    with pytest.raises(CommandError):
        call_command("prunejobs", "--older-than", "-1")
