"""A worker paused (SIGSTOP: a frozen VM, a partition) inside its
publication transaction holds the job's and the supplier's rows (taken
last). Recovery ends its session once its lease is long gone; its job is
published once by another worker, the jobs that waited on its locks do not
lose an attempt, and the workspace's other publications never wait on it
(real processes, short leases)."""

import signal

import pytest
from django.db import connection, transaction

from catalog.models import CatalogRevision, Supplier
from catalog.services import pricesheet_store, supplier_for_publication
from jobs.models import Attempt, Job, State
from jobs.services import job_admit
from tests.helpers import wait_for

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

FAST = {
    "JOB_LEASE_SECONDS": 2,
    "JOB_RECOVERY_INTERVAL_SECONDS": 0.25,
    "JOB_POLL_INTERVAL_SECONDS": 0.2,
    "JOB_BACKOFF_BASE_SECONDS": 0.2,
    "JOB_BACKOFF_MAX_SECONDS": 1,
}


def sheet_job(workspace, label: str, supplier_name: str) -> Job:
    data = f"SKU,Description,Unit,Price,Currency\n{label}-1,Item {label},kg,1.50,EUR\n".encode()
    sheet = pricesheet_store(
        workspace=workspace, chunks=[data], original_name=f"{label}.csv", supplier_name=supplier_name
    )
    job, _ = job_admit(
        workspace_id=workspace.pk,
        kind="parse_sheet",
        payload={"sheet_id": str(sheet.pk), "supplier_id": None, "supplier_name": supplier_name},
    )
    return job


def waiting_on_supplier_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")  # fresh activity inside a transaction
        cursor.execute(
            "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND query LIKE '%%catalog_supplier%%FOR NO KEY UPDATE%%'"
        )
        return cursor.fetchone() is not None


def charged_attempts(job: Job) -> int:
    """Attempts counted against the budget (uncounted ones moved it up)."""
    return job.attempt - (job.max_attempts - 5)


def test_a_worker_paused_inside_its_publication_is_ended_and_holds_up_no_other_job(
    workspace, other_workspace, processes, tmp_path, settings
):
    settings.MEDIA_ROOT = media = tmp_path / "media"
    stalled = sheet_job(workspace, "first", "Acme")
    acme = supplier_for_publication(workspace_id=workspace.pk, name="Acme")
    with transaction.atomic():
        # Hold the supplier's row so that A's publication stops inside its
        # transaction, at its last step: the guarded accept took the job's
        # row, the items are written.
        Supplier.objects.select_for_update(no_key=True).get(pk=acme.pk)
        a = processes.worker(
            "worker-a",
            **FAST,
            MEDIA_ROOT=media,
            JOB_LOCK_TIMEOUT_MS=120_000,
            JOB_IDLE_IN_TRANSACTION_TIMEOUT_MS=0,
        )
        wait_for(waiting_on_supplier_lock, timeout=60, message="A's publication to wait")
        a.send_signal(signal.SIGSTOP)
    # A's session now holds the job's and the supplier's rows, its process paused.
    same = sheet_job(workspace, "same", "Acme")
    neighbour = sheet_job(workspace, "neighbour", "Bolt")
    other = sheet_job(other_workspace, "other", "Acme")
    processes.worker("worker-b", **FAST, MEDIA_ROOT=media, JOB_LOCK_TIMEOUT_MS=500)
    for job in (stalled, same, neighbour, other):
        wait_for(
            lambda job=job: Job.objects.get(pk=job.pk).state == State.COMPLETED,
            timeout=90,
            interval=0.1,
            message=f"job {job.pk} to be published",
        )
    a.send_signal(signal.SIGCONT)
    assert CatalogRevision.objects.filter(job_id=stalled.pk).count() == 1
    stalled.refresh_from_db()
    assert Attempt.objects.get(job=stalled, number=stalled.attempt).worker_id == "worker-b"
    assert "ended stalled session" not in processes.output(a)
    b_log = processes.output(processes.procs[1])
    assert "terminating that session" in b_log, b_log  # the whole log, when it is not there
    for job in (same, neighbour, other):
        job.refresh_from_db()
        assert charged_attempts(job) == 1, (job.attempt, job.max_attempts, job.reason)
        assert CatalogRevision.objects.filter(job_id=job.pk).count() == 1
    # The workspace's other supplier never waited on A's locks.
    assert (neighbour.attempt, neighbour.max_attempts) == (1, 5)
