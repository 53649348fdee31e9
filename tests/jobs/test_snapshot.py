"""The job page shows the job and its attempts as of one moment, even when a
worker claims the job between the two reads."""

import threading

import pytest
from django.db import connection
from django.test import Client

from jobs.models import Job, State
from jobs.services import job_admit, job_claim_next

pytestmark = pytest.mark.django_db(transaction=True)


class ClaimAfterFirstJobRead:
    """Runs a claim on another connection, committed, right after the page
    has read the job row and before it reads anything else."""

    def __init__(self):
        self.done = False

    def __call__(self, execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if not self.done and 'FROM "jobs_job"' in sql and "jobs_attempt" not in sql:
            self.done = True
            thread = threading.Thread(target=self._claim)
            thread.start()
            thread.join(timeout=30)
            assert not thread.is_alive()
        return result

    def _claim(self):
        try:
            assert job_claim_next(worker_id="w1", kinds=["noop"]) is not None
        finally:
            connection.close()


@pytest.mark.parametrize("url", ["/jobs/{id}/", "/jobs/{id}/live"])
def test_a_claim_between_the_reads_does_not_mix_two_moments(member, workspace, url):
    job, _ = job_admit(workspace_id=workspace.pk, kind="noop", payload={}, idempotency_key="k")
    client = Client()
    client.force_login(member)
    hook = ClaimAfterFirstJobRead()

    with connection.execute_wrapper(hook):
        response = client.get(url.format(id=job.pk))

    assert hook.done
    assert Job.objects.get(pk=job.pk).state == State.RUNNING  # the claim did commit
    assert response.status_code == 200
    assert response.context["job"].state == State.QUEUED
    assert [row["attempt"].number for row in response.context["attempts"]] == []
