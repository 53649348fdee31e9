"""A real worker process and its parse child: a cancelled job's child is
killed at once and the worker goes on; SIGTERM lets the child finish and
the job end on its first attempt before the worker exits."""

import os
import signal
from pathlib import Path

import pytest

from jobs.models import Attempt, Job, State
from jobs.services import job_cancel
from tests.catalog.hostile import blank_lines_then_item_csv
from tests.catalog.test_parse_sheet import CLEAN_CSV, admit_sheet
from tests.helpers import wait_for

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # The parent pid is the 2nd field after the parenthesised name.
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def parse_children(worker_pid: int) -> set[int]:
    """The worker's grandchildren: children of its fork server."""
    return {pid for server in children(worker_pid) for pid in children(server)}


def job_parse_child(worker_pid: int, job: Job) -> set[int]:
    """The parse child of `job`: the worker's grandchildren once the job is
    claimed (the child its warm-up forks has ended before the first claim)."""
    if Job.objects.get(pk=job.pk).state != State.RUNNING:
        return set()
    return parse_children(worker_pid)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def test_cancelling_a_parsing_job_kills_its_child_and_the_worker_goes_on(workspace, processes, media):
    slow = admit_sheet(workspace, "blank.csv", blank_lines_then_item_csv())
    worker = processes.worker("w", MEDIA_ROOT=media, JOB_LEASE_SECONDS=3, JOB_POLL_INTERVAL_SECONDS=0.2)
    child = wait_for(lambda: job_parse_child(worker.pid, slow), timeout=60, message="the parse child").pop()
    job_cancel(job_id=slow.pk, by_label="test")
    # The lease keeper notices within a renewal (1 s here); the child is
    # killed long before it could have finished reading 20 million lines.
    wait_for(lambda: not alive(child), timeout=8, message="the parse child to be killed")
    assert Job.objects.get(pk=slow.pk).state == State.CANCELLED
    assert Attempt.objects.get(job=slow, number=1).outcome == "cancelled"
    clean = admit_sheet(workspace, "fruit.csv", CLEAN_CSV)
    wait_for(
        lambda: Job.objects.get(pk=clean.pk).state == State.COMPLETED, timeout=60, message="the next job"
    )
    assert worker.poll() is None


def test_sigterm_lets_the_parse_child_finish_and_the_job_end_first_time(workspace, processes, media):
    slow = admit_sheet(workspace, "blank.csv", blank_lines_then_item_csv())
    worker = processes.worker("w", MEDIA_ROOT=media, JOB_LEASE_SECONDS=3, JOB_POLL_INTERVAL_SECONDS=0.2)
    wait_for(lambda: job_parse_child(worker.pid, slow), timeout=60, message="the parse child")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=120) == 0, processes.output(worker)
    slow.refresh_from_db()
    assert (slow.state, slow.attempt) == (State.NEEDS_ATTENTION, 1), slow.reason
    assert "more than 150000 rows" in slow.reason


def test_a_worker_killed_outright_takes_its_parse_child_with_it(workspace, processes, media):
    from tests.fake_llm import FakeProvider

    fake = FakeProvider()
    try:
        fake.script.append((200, {"items": []}, 60))  # a model call that hangs
        admit_sheet(workspace, "fruit.csv", CLEAN_CSV)
        worker = processes.worker(
            "w",
            MEDIA_ROOT=media,
            EXTRACTOR="openai",
            LLM_BASE_URL=fake.url,
            LLM_API_KEY="k",
            LLM_MODEL="fake",
            LLM_TIMEOUT_SECONDS=50,
        )
        wait_for(lambda: len(fake.requests) == 1, timeout=60, message="the child's model call")
        child = parse_children(worker.pid).pop()
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
        # Its fork server sees the worker gone and exits; the child goes with
        # it instead of waiting on the model for nobody.
        wait_for(lambda: not alive(child), timeout=10, message="the orphaned parse child to end")
    finally:
        fake.release.set()
        fake.close()
