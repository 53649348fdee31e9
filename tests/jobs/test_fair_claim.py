"""The claim is fair between workspaces: one workspace's backlog does not
hold up another workspace's job (real PostgreSQL)."""

import psycopg
import pytest

from jobs.models import Job, State
from jobs.services import (
    CLAIM_LOOKAHEAD,
    job_accept_output,
    job_admit,
    job_claim_next,
    jobs_admit_many,
    jobs_claim_batch,
)
from tests.helpers import database_url


def backlog(workspace, count: int) -> None:
    jobs_admit_many(workspace_id=workspace.pk, kind="noop", count=count)


def admit_one(workspace) -> Job:
    job, _ = job_admit(workspace_id=workspace.pk, kind="noop", payload={})
    return job


def run_next() -> Job:
    """One worker turn: claim the next job and finish it."""
    claim = job_claim_next(worker_id="w1")
    job_accept_output(claim=claim, output={})
    return Job.objects.get(pk=claim.job_id)


def test_a_quiet_workspaces_job_is_run_before_a_noisy_backlog_drains(workspace, other_workspace):
    backlog(workspace, 20)
    quiet = admit_one(other_workspace)  # admitted after the whole backlog
    order = [run_next().workspace_id for _ in range(3)]
    assert order == [workspace.pk, other_workspace.pk, workspace.pk]
    assert Job.objects.filter(workspace=workspace, state=State.QUEUED).count() == 18
    assert Job.objects.get(pk=quiet.pk).state == State.COMPLETED


def test_the_workspace_with_fewer_jobs_running_is_claimed_first(workspace, other_workspace):
    backlog(workspace, 10)
    held = [job_claim_next(worker_id=f"w{n}") for n in range(2)]  # two of its jobs run
    quiet = admit_one(other_workspace)
    assert {claim.workspace_id for claim in held} == {workspace.pk}
    assert job_claim_next(worker_id="w3").job_id == quiet.pk


def test_one_workspaces_jobs_are_claimed_oldest_first(workspace):
    first = admit_one(workspace)
    second = admit_one(workspace)
    assert [job_claim_next(worker_id="w1").job_id for _ in range(2)] == [first.pk, second.pk]


def test_a_batch_claim_takes_turns_between_workspaces(workspace, other_workspace):
    backlog(workspace, 10)
    backlog(other_workspace, 2)
    claims = jobs_claim_batch(worker_id="w1", limit=4)
    assert [claim.workspace_id for claim in claims] == [
        workspace.pk,
        other_workspace.pk,
        workspace.pk,
        other_workspace.pk,
    ]


@pytest.mark.django_db(transaction=True)
def test_jobs_held_by_other_claimers_past_the_look_ahead_do_not_hide_the_rest(workspace):
    backlog(workspace, CLAIM_LOOKAHEAD + 5)
    oldest = list(Job.objects.order_by("run_after", "id").values_list("id", flat=True))
    held = oldest[: CLAIM_LOOKAHEAD + 2]
    # Another session holds the rows the fair claim looks at, as claimers
    # in flight would.
    with psycopg.connect(database_url()) as other:
        other.execute("SELECT id FROM jobs_job WHERE id = ANY(%s) FOR UPDATE", [held])
        claim = job_claim_next(worker_id="w1")
        assert claim is not None
        assert claim.job_id not in held
