"""Lists, the status resource and the items resource never select a job's
whole `output` (every extracted item of a sheet): the items resource reads
the page it answers in the database."""

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from jobs.models import Job, State
from jobs.services import job_admit

# The whole column; a small key of it (`"output" -> 'columns'`, how the sheet
# was read, which the status carries) is read in the database and allowed.
OUTPUT_COLUMN = re.compile(r'"jobs_job"\."output"(?!\s*->)')


@pytest.fixture
def member_client(member):
    client = Client()
    client.force_login(member)
    return client


@pytest.fixture
def completed_job(workspace):
    job, _ = job_admit(workspace_id=workspace.pk, kind="parse_sheet", payload={})
    items = [{"sku": f"S-{n}", "description": "x" * 200} for n in range(500)]
    Job.objects.filter(pk=job.pk).update(state=State.COMPLETED, output={"items": items})
    return job


def job_selects(client, url: str) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, response.content[:500]
    selects = [
        q["sql"]
        for q in captured.captured_queries
        if q["sql"].startswith("SELECT") and 'FROM "jobs_job"' in q["sql"]
    ]
    assert selects, f"{url} read no job"
    return selects


@pytest.mark.parametrize("url", ["/api/jobs", "/jobs/", "/jobs/rows"])
def test_lists_do_not_select_output(member_client, completed_job, url):
    assert not [sql for sql in job_selects(member_client, url) if OUTPUT_COLUMN.search(sql)]


def test_status_resource_does_not_select_output(member_client, completed_job):
    selects = job_selects(member_client, f"/api/jobs/{completed_job.pk}")
    assert not [sql for sql in selects if OUTPUT_COLUMN.search(sql)]


def test_items_resource_reads_its_page_in_the_database_never_the_whole_output(member_client, completed_job):
    selects = job_selects(member_client, f"/api/jobs/{completed_job.pk}/items?page_size=10")
    assert not [sql for sql in selects if OUTPUT_COLUMN.search(sql)]
