"""Session limits of worker, relay and recovery connections."""

import signal
import threading

import pytest
from django.db import connection, connections, transaction

from jobs.models import Job, State
from jobs.services import job_admit
from jobs.sessions import session_options, use_job_session_limits
from tests.helpers import wait_for


def test_session_options_add_both_limits_and_keep_existing_options():
    assert session_options(
        existing="-c search_path=x", statement_timeout_ms=60000, lock_timeout_ms=10000
    ) == ("-c search_path=x -c statement_timeout=60000 -c lock_timeout=10000")
    assert session_options(existing="", statement_timeout_ms=0, lock_timeout_ms=0) == ""


def test_session_options_replace_earlier_limits():
    once = session_options(existing="-c search_path=x", statement_timeout_ms=1, lock_timeout_ms=2)
    assert session_options(existing=once, statement_timeout_ms=3, lock_timeout_ms=0) == (
        "-c search_path=x -c statement_timeout=3"
    )


@pytest.mark.django_db(transaction=True)
def test_connections_opened_after_the_call_carry_the_limits(settings):
    settings.JOB_STATEMENT_TIMEOUT_MS = 45000
    settings.JOB_LOCK_TIMEOUT_MS = 1500
    settings.JOB_IDLE_IN_TRANSACTION_TIMEOUT_MS = 20000
    options = connections.settings["default"].setdefault("OPTIONS", {})
    saved = dict(options)
    seen = {}

    def new_thread_connection():
        try:
            with connection.cursor() as cursor:
                for name in ("statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout"):
                    cursor.execute(f"SHOW {name}")
                    seen[name] = cursor.fetchone()[0]
            seen["keepalives_idle"] = connection.connection.info.get_parameters().get("keepalives_idle")
        finally:
            connection.close()

    try:
        use_job_session_limits()
        thread = threading.Thread(target=new_thread_connection)
        thread.start()
        thread.join(30)
    finally:
        options.clear()
        options.update(saved)
        connection.close()
    assert seen == {
        "statement_timeout": "45s",
        "lock_timeout": "1500ms",
        "idle_in_transaction_session_timeout": "20s",
        "keepalives_idle": "30",
    }


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_worker_lease_renewal_behind_a_lock_fails_at_the_lock_timeout(workspace, processes):
    job, _ = job_admit(workspace_id=workspace.pk, kind="sleep", payload={"seconds": 600})
    worker = processes.worker(
        "w", JOB_LEASE_SECONDS=3, JOB_LOCK_TIMEOUT_MS=200, JOB_POLL_INTERVAL_SECONDS=0.2
    )
    wait_for(
        lambda: Job.objects.filter(pk=job.pk, state=State.RUNNING).exists(),
        message="the worker to claim the job",
    )
    with transaction.atomic():
        # Hold the job's row lock: the worker's renewal UPDATE waits behind it.
        Job.objects.select_for_update().get(pk=job.pk)
        wait_for(
            lambda: "lock timeout" in processes.output(worker),
            timeout=30,
            message="the renewal to give up at the lock timeout",
        )
    worker.send_signal(signal.SIGKILL)
    assert "lease renewal failed" in processes.output(worker)
