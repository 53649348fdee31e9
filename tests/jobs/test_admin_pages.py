"""The admin job pages read well: file and supplier columns, attempts before
a folded output, links to the job's pages, readable durations, and a
warning before retrying a job that failed for good."""

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME

from catalog.services import pricesheet_admit
from jobs.admin import readable_duration
from jobs.models import Attempt, Job, State
from jobs.services import job_claim_next, job_fail

CHANGELIST = "/admin/jobs/job/"
CSV = b"SKU,Description,Unit,Price,Currency\nA-1,Bolt M8,piece,0.42,EUR\n"


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def admin_client(client, django_user_model, db):
    client.force_login(django_user_model.objects.create_superuser("root"))
    return client


@pytest.fixture
def sheet_job(workspace, member):
    job, _ = pricesheet_admit(
        workspace=workspace,
        chunks=[CSV],
        original_name="northwind-2026.csv",
        content_type="text/csv",
        supplier_name="Northwind Hardware",
        idempotency_key="k1",
        user=member,
    )
    return job


def failed_for_good(job) -> Job:
    claim = job_claim_next(worker_id="w1", kinds=["parse_sheet"])
    job_fail(claim=claim, error="XLSX rejected: 12000 zip members (limit 10000)", transient=False)
    return Job.objects.get(pk=job.pk)


@pytest.mark.parametrize(
    "seconds, shown",
    [
        (0.009209, "9 ms"),
        (1.25, "1.2 s"),
        (192, "3 min 12 s"),
        (7500, "2 h 5 min"),
        (3 * 86400 + 4 * 3600, "3 d 4 h"),
        (None, "-"),
    ],
)
def test_durations_read_as_times(seconds, shown):
    assert readable_duration(seconds) == shown


def test_the_job_list_shows_the_file_and_the_supplier(admin_client, sheet_job):
    page = admin_client.get(CHANGELIST).content.decode()
    assert "northwind-2026.csv" in page
    assert "Northwind Hardware" in page
    assert "column-file" in page and "column-supplier" in page


def test_the_job_page_lists_attempts_before_the_folded_output(admin_client, sheet_job):
    claim = job_claim_next(worker_id="w1", kinds=["parse_sheet"])
    from jobs.services import job_accept_output

    job_accept_output(
        claim=claim, output={"items": [{"sku": "A-1", "flags": []}], "notes": []}, needs_review=True
    )
    Job.objects.filter(pk=sheet_job.pk).update(waiting_seconds=0.009209)

    page = admin_client.get(f"{CHANGELIST}{sheet_job.pk}/change/").content.decode()

    assert page.index('id="attempts-group"') < page.index('<details class="module" id="job-output">')
    assert "0.009209" not in page and "9 ms" in page
    assert f'href="/jobs/{sheet_job.pk}/"' in page
    assert f'href="/review/{sheet_job.pk}/"' in page


def test_a_failure_for_good_says_so_on_the_page_and_before_a_retry(admin_client, sheet_job):
    job = failed_for_good(sheet_job)
    assert job.state == State.NEEDS_ATTENTION
    assert Attempt.objects.get(job=job).outcome == Attempt.Outcome.FAILED

    page = admin_client.get(f"{CHANGELIST}{job.pk}/change/").content.decode()
    assert "failed for a reason a retry does not change" in page
    assert "12000 zip members" in page

    confirm = admin_client.post(CHANGELIST, {"action": "retry", ACTION_CHECKBOX_NAME: [str(job.pk)]})
    assert '<p class="errornote" id="deterministic">1 of the selected jobs failed for a reason' in (
        confirm.content.decode()
    )


def test_a_transient_give_up_is_not_called_deterministic(admin_client, sheet_job):
    Job.objects.filter(pk=sheet_job.pk).update(max_attempts=1)
    claim = job_claim_next(worker_id="w1", kinds=["parse_sheet"])
    job_fail(claim=claim, error="timeout", transient=True)

    page = admin_client.get(f"{CHANGELIST}{sheet_job.pk}/change/").content.decode()

    assert "a retry does not change" not in page
