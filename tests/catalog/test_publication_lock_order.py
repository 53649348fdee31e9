"""Publication takes the shared rows (the supplier's, the workspace's) last
and briefly: a publication still writing its items holds up no other
publication of its workspace (real PostgreSQL, two sessions)."""

import threading

import pytest
from django.db import connection, connections, transaction

from accounts.models import Workspace
from catalog import services
from catalog.models import CatalogRevision, Supplier
from catalog.services import supplier_for_publication
from jobs.models import Job, State
from jobs.worker import Worker
from tests.catalog.test_stalled_publication import sheet_job
from tests.helpers import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def publish_paused_in_its_items(monkeypatch, job: Job) -> tuple[threading.Event, threading.Event]:
    """Run `job` on a worker thread whose publication stops once its items
    are written, inside its transaction, until `finish` is set."""
    writing, finish = threading.Event(), threading.Event()
    copy = services._items_copy

    def copy_then_pause(revision, items):
        copy(revision, items)
        if revision.job_id == job.pk:
            writing.set()
            finish.wait(60)

    monkeypatch.setattr(services, "_items_copy", copy_then_pause)

    def work():
        try:
            Worker(worker_id="first").run_one()
        finally:
            connections.close_all()

    thread = threading.Thread(target=work)
    thread.start()
    assert writing.wait(60), "the first publication did not reach its items"
    return finish, thread


@pytest.mark.parametrize("names", [("Alpha", "Beta"), ("", "")], ids=["new suppliers", "no supplier"])
def test_a_second_publication_of_the_workspace_completes_while_the_first_writes_its_items(
    workspace, monkeypatch, names
):
    first = sheet_job(workspace, "first", names[0])
    second = sheet_job(workspace, "second", names[1])
    finish, thread = publish_paused_in_its_items(monkeypatch, first)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '2s'")  # a worker's limit, shortened
        Worker(worker_id="second").run_one()
        second.refresh_from_db()
        assert second.state == State.COMPLETED, second.reason
    finally:
        finish.set()
        thread.join(60)
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
    assert Job.objects.get(pk=first.pk).state == State.COMPLETED
    numbers = dict(CatalogRevision.objects.values_list("job_id", "number"))
    assert numbers == ({first.pk: 1, second.pk: 1} if names[0] else {second.pk: 1, first.pk: 2})


def test_two_workers_making_one_supplier_in_two_spellings_make_one(workspace):
    made = []

    def make(name: str) -> None:
        try:
            made.append(supplier_for_publication(workspace_id=workspace.pk, name=name))
        finally:
            connections.close_all()

    with transaction.atomic():
        # Both wait on the workspace's row, then run one after the other.
        Workspace.objects.select_for_update(no_key=True).get(pk=workspace.pk)
        threads = [threading.Thread(target=make, args=(name,)) for name in ("Acme", " ACME ")]
        for thread in threads:
            thread.start()
        wait_for(lambda: waiting_on_locks() == 2, timeout=30, message="both to wait")
    for thread in threads:
        thread.join(30)
    assert len({supplier.pk for supplier in made}) == 1
    assert Supplier.objects.count() == 1


def waiting_on_locks() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND datname = current_database()"
        )
        return cursor.fetchone()[0]
