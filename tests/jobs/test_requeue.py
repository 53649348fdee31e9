"""The requeue-with-input transition: a person sends a job back to the queue
with new input (a column mapping), guarded by state and version."""

import pytest

from jobs.models import Job, OutboxMessage, State
from jobs.services import InvalidTransition, VersionConflict, job_admit, job_requeue_with_input


def job_in(workspace, state, **changes):
    job, _ = job_admit(workspace_id=workspace.pk, kind="noop", payload={"sheet_id": "s"})
    Job.objects.filter(pk=job.pk).update(state=state, attempt=3, max_attempts=3, **changes)
    return Job.objects.get(pk=job.pk)


@pytest.mark.parametrize("state", [State.AWAITING_REVIEW, State.NEEDS_ATTENTION])
def test_requeue_merges_the_input_and_gives_a_fresh_budget(workspace, settings, state):
    job = job_in(workspace, state, output={"items": [1]})
    version = job_requeue_with_input(
        job_id=job.pk,
        expected_version=job.version,
        payload_changes={"mapping": {"x": 1}},
        by_label="rey",
        reason="column mapping applied",
    )
    job.refresh_from_db()
    assert version == job.version
    assert job.state == State.QUEUED
    assert job.payload == {"sheet_id": "s", "mapping": {"x": 1}}
    assert job.max_attempts == 3 + settings.JOB_MAX_ATTEMPTS
    assert job.review_required is True and job.output is None
    assert job.reason == "column mapping applied by rey"
    assert OutboxMessage.objects.filter(topic="job.requeued").count() == 1


def test_requeue_at_a_stale_version_changes_nothing(workspace):
    job = job_in(workspace, State.AWAITING_REVIEW)
    with pytest.raises(VersionConflict):
        job_requeue_with_input(
            job_id=job.pk,
            expected_version=job.version - 1,
            payload_changes={"mapping": {}},
            by_label="rey",
            reason="r",
        )
    after = Job.objects.get(pk=job.pk)
    assert (after.state, after.version, after.payload) == (
        State.AWAITING_REVIEW,
        job.version,
        {"sheet_id": "s"},
    )


@pytest.mark.parametrize("state", [State.QUEUED, State.COMPLETED, State.CANCELLED])
def test_requeue_from_any_other_state_is_an_invalid_transition(workspace, state):
    job = job_in(workspace, state)
    with pytest.raises(InvalidTransition):
        job_requeue_with_input(
            job_id=job.pk,
            expected_version=job.version,
            payload_changes={"mapping": {}},
            by_label="rey",
            reason="r",
        )
    assert Job.objects.get(pk=job.pk).version == job.version


def test_requeues_never_raise_the_budget_past_the_ceiling(workspace, settings):
    settings.JOB_MAX_TOTAL_ATTEMPTS = 10
    job = job_in(workspace, State.NEEDS_ATTENTION)
    Job.objects.filter(pk=job.pk).update(attempt=8, max_attempts=8)
    job.refresh_from_db()
    job_requeue_with_input(
        job_id=job.pk,
        expected_version=job.version,
        payload_changes={"mapping": {"x": 1}},
        by_label="rey",
        reason="r",
    )
    assert Job.objects.get(pk=job.pk).max_attempts == 10  # not 8 + 5


def test_past_the_ceiling_each_requeue_allows_one_attempt(workspace, settings):
    settings.JOB_MAX_TOTAL_ATTEMPTS = 10
    job = job_in(workspace, State.NEEDS_ATTENTION)
    Job.objects.filter(pk=job.pk).update(attempt=12, max_attempts=12)
    job.refresh_from_db()
    job_requeue_with_input(
        job_id=job.pk,
        expected_version=job.version,
        payload_changes={"mapping": {"x": 1}},
        by_label="rey",
        reason="r",
    )
    assert Job.objects.get(pk=job.pk).max_attempts == 13
