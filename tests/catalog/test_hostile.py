"""Hostile uploads end in a final state within their limits, with a reason
an uploader reads, on the first attempt; the worker goes on, and a clean job
of another workspace is not held up by a hostile one."""

import json
import re
import time

import pytest

from jobs.models import Attempt, Job, State
from jobs.worker import Worker
from tests.catalog.hostile import AMPLIFICATION, CORPUS
from tests.catalog.test_parse_sheet import CLEAN_CSV, admit_sheet
from tests.helpers import wait_for

FINAL = {State.NEEDS_ATTENTION, State.COMPLETED, State.AWAITING_REVIEW}
INTERNALS = re.compile(r"Traceback|Error:|(?:^|[\s'\"(])/\w+/|SELECT|INSERT|UPDATE |psycopg|internal error")


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PARSE_MAX_SECONDS = 10
    return settings.MEDIA_ROOT


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_hostile_file_ends_on_its_first_attempt_with_a_plain_reason(workspace, name):
    filename, build, expectation = CORPUS[name]
    job = admit_sheet(workspace, filename, build())
    worker = Worker(worker_id="w")
    assert worker.run_one() is True
    job.refresh_from_db()
    assert job.state in FINAL, (name, job.state, job.reason)
    assert job.attempt == 1
    if expectation == "refused":
        assert job.state == State.NEEDS_ATTENTION
    if expectation == "read":
        assert job.state in (State.COMPLETED, State.AWAITING_REVIEW), job.reason
    if job.state == State.NEEDS_ATTENTION:
        assert job.reason and not INTERNALS.search(job.reason), job.reason
    assert worker.run_one() is False  # nothing left to retry


def test_cell_text_is_cut_at_the_spreadsheet_limit(workspace):
    filename, build, _ = CORPUS["million-char-cell.xlsx"]
    job = admit_sheet(workspace, filename, build())
    Worker(worker_id="w").run_one()
    from jobs.services import job_load_checkpoint

    rows = job_load_checkpoint(job_id=job.pk, name="table")["sheets"][0]["rows"]
    assert max(len(cell) for row in rows for cell in row) == 32_767
    # Text that may have been cut is never published without a look.
    job.refresh_from_db()
    assert job.state == State.AWAITING_REVIEW
    flags = {(f["code"], f["field"]) for item in job.output["items"] for f in item["flags"]}
    assert ("too_large", "description") in flags


def test_parse_limits_are_not_retried(workspace, settings):
    settings.PARSE_MAX_MEMORY_MB = 160
    rows = "".join(
        f"S-{r},Item {r},kg,{r}.50,EUR," + ",".join(f"n{r}x{c}" for c in range(35)) + "\n"
        for r in range(60_000)
    )
    job = admit_sheet(workspace, "big.csv", ("SKU,Description,Unit,Price,Currency\n" + rows).encode())
    Worker(worker_id="w").run_one()
    job.refresh_from_db()
    assert (job.state, job.attempt) == (State.NEEDS_ATTENTION, 1)
    assert job.reason == (
        "this sheet needs more than 160 MB to read; split it into smaller files "
        "or remove empty sheets, rows and columns"
    )
    assert Attempt.objects.get(job=job).outcome == "failed"


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_a_hostile_job_does_not_hold_up_a_clean_job_of_another_workspace(
    workspace, other_workspace, processes, media
):
    """Baseline and hostile run in one worker process with two loops; the
    clean job's admit-to-done time is compared with its time alone."""
    env = {
        "MEDIA_ROOT": media,
        "JOB_LEASE_SECONDS": 3,
        "JOB_POLL_INTERVAL_SECONDS": 0.1,
        "PARSE_MAX_SECONDS": 20,
    }
    processes.worker("w", "--concurrency", "2", **env)

    def run_clean(label):
        job = admit_sheet(other_workspace, f"{label}.csv", CLEAN_CSV.replace(b"A-1", label.encode()))
        started = time.monotonic()
        wait_for(
            lambda: Job.objects.get(pk=job.pk).state == State.COMPLETED,
            timeout=60,
            interval=0.05,
            message=f"{label} to complete",
        )
        return time.monotonic() - started

    run_clean("warmup")
    baseline = run_clean("baseline")
    filename, build, _ = CORPUS["digits-description.csv"]
    hostile = admit_sheet(workspace, filename, build())
    wait_for(
        lambda: Job.objects.get(pk=hostile.pk).state != State.QUEUED,
        timeout=30,
        message="the hostile job to be claimed",
    )
    beside = run_clean("beside")
    assert beside - baseline < 2 + 3, (baseline, beside)  # within 2 s, with room for a busy machine
    wait_for(
        lambda: Job.objects.get(pk=hostile.pk).state in FINAL, timeout=60, message="the hostile job to end"
    )
    hostile.refresh_from_db()
    # Its lease was renewed throughout: one attempt, never handed over.
    assert hostile.attempt == 1, hostile.reason


@pytest.mark.parametrize("name", AMPLIFICATION)
def test_amplified_file_is_refused_or_published_bounded_and_flagged(workspace, name):
    from jobs.models import JobCheckpoint

    filename, build, _ = CORPUS[name]
    data = build()
    job = admit_sheet(workspace, filename, data)
    Worker(worker_id="w").run_one()
    job.refresh_from_db()
    assert job.attempt == 1, job.reason
    assert job.state in (State.NEEDS_ATTENTION, State.AWAITING_REVIEW), (job.state, job.reason)
    if job.state == State.NEEDS_ATTENTION:
        assert "expands to more than 64 MB" in job.reason or "MB to read" in job.reason, job.reason
        return
    descriptions = [item["description"] for item in job.output["items"]]
    assert max(map(len, descriptions)) <= 4_000
    assert all(
        ("too_large", "description") in {(f["code"], f["field"]) for f in item["flags"]}
        for item in job.output["items"]
    )
    # What the job stored stays within a small multiple of the upload.
    stored = len(json.dumps(job.output)) + sum(
        len(json.dumps(data)) for data in JobCheckpoint.objects.filter(job=job).values_list("data", flat=True)
    )
    assert stored < 10 * len(data)
