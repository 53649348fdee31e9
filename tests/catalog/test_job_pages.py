"""The uploader's pages: sign in, the jobs list, the upload form, the job
page and its cancel button; and the demo the project ships."""

import io
import uuid
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db.models.functions import Now
from django.test import Client

from accounts.models import Membership, Workspace
from catalog.models import PriceSheet
from accounts.services import membership_add, workspace_create
from jobs.models import Attempt, Job, State
from jobs.services import job_admit, job_claim_next, job_fail
from tests.helpers import comparable_headers

CSV = b"SKU,Description,Unit,Price,Currency\nA-1,Bolt M8,piece,0.42,EUR\n"
CANCEL_NOTE = "Cancelling stops publication, not a model call already in flight"


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def browser_client(member):
    client = Client()
    client.force_login(member)
    return client


def _file(content=CSV, name="prices.csv"):
    handle = io.BytesIO(content)
    handle.name = name
    return handle


def admitted_job(workspace, key="k", **changes):
    job, _ = job_admit(
        workspace_id=workspace.pk, kind="noop", payload={}, idempotency_key=key, fingerprint="f"
    )
    if changes:
        Job.objects.filter(pk=job.pk).update(**changes)
    return Job.objects.get(pk=job.pk)


def upload_page(client, *, key="form-key", supplier="Northwind", content=CSV, **extra):
    return client.post(
        "/jobs/new", {"file": _file(content), "supplier": supplier, "idempotency_key": key}, **extra
    )


# --- signing in -----------------------------------------------------------------------------


def test_login_page_renders_a_form(client, db):
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    assert b'name="username"' in response.content and b'name="password"' in response.content


def test_signing_in_leads_to_the_jobs_list(client, member):
    response = client.post("/accounts/login/", {"username": "mia", "password": "mia-password-1"})
    assert response.status_code == 302
    assert response["Location"] == "/jobs/"


def test_jobs_list_requires_sign_in(client, db):
    response = client.get("/jobs/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


# --- the list -------------------------------------------------------------------------------


def test_jobs_list_shows_only_the_members_jobs(browser_client, workspace, other_workspace):
    mine = admitted_job(workspace, key="a")
    theirs = admitted_job(other_workspace, key="b")
    content = browser_client.get("/jobs/").content.decode()
    assert str(mine.pk) in content
    assert str(theirs.pk) not in content


def test_jobs_list_polls_a_rows_fragment(browser_client, workspace):
    job = admitted_job(workspace)
    page = browser_client.get("/jobs/").content.decode()
    rows = browser_client.get("/jobs/rows")
    assert 'data-live-url="/jobs/rows"' in page
    assert rows.status_code == 200
    assert f'data-job-id="{job.pk}"' in rows.content.decode()
    assert "<html" not in rows.content.decode()


# --- the upload form --------------------------------------------------------------------------


def test_upload_form_has_no_workspace_choice_for_a_single_workspace(browser_client):
    content = browser_client.get("/jobs/new").content.decode()
    assert 'name="workspace"' not in content
    assert 'type="file"' in content and "data-dropzone" in content


def test_upload_form_offers_the_workspaces_of_a_member_of_several(browser_client, member):
    membership_add(
        workspace=workspace_create(slug="second"), username=member.username, role=Membership.Role.MEMBER
    )
    content = browser_client.get("/jobs/new").content.decode()
    assert 'name="workspace"' in content
    assert 'value="second"' in content and 'value="acme"' in content


def test_uploading_through_the_form_redirects_to_the_job_page(browser_client, workspace):
    response = upload_page(browser_client)
    job = Job.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/jobs/{job.pk}/"
    assert (job.kind, job.state, job.workspace_id) == ("parse_sheet", State.QUEUED, workspace.pk)
    assert PriceSheet.objects.get(pk=job.payload["sheet_id"]).supplier_name == "Northwind"


def test_a_supplier_name_past_200_characters_is_refused_with_its_reason(browser_client):
    response = upload_page(browser_client, supplier="N" * 201)
    assert response.status_code == 400
    assert "200 characters" in response.content.decode()
    assert not Job.objects.exists()


def test_submitting_the_same_form_twice_admits_one_job(browser_client):
    first = upload_page(browser_client)
    second = upload_page(browser_client)
    assert first["Location"] == second["Location"]
    assert Job.objects.count() == 1


def test_upload_form_without_csrf_token_is_refused(member):
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    response = upload_page(client)
    assert response.status_code == 403
    assert not Job.objects.exists()


def test_upload_form_with_csrf_token_is_accepted(member):
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    client.get("/jobs/new")
    response = upload_page(client, HTTP_X_CSRFTOKEN=client.cookies["csrftoken"].value)
    assert response.status_code == 302


def test_upload_form_refuses_a_file_past_the_limit(browser_client, settings):
    settings.UPLOAD_MAX_BYTES = 10
    response = upload_page(browser_client)
    assert response.status_code == 413
    assert b"larger than the limit" in response.content
    assert not Job.objects.exists()


def test_upload_form_refuses_an_empty_file(browser_client):
    response = upload_page(browser_client, content=b"")
    assert response.status_code == 400
    assert not Job.objects.exists()


# --- the job page -----------------------------------------------------------------------------


def test_job_page_shows_state_progress_timings_and_the_cancel_note(browser_client, workspace):
    job = admitted_job(workspace, state_changed_at=Now() - timedelta(seconds=75))
    content = browser_client.get(f"/jobs/{job.pk}/").content.decode()
    assert 'data-state="queued"' in content
    assert 'role="progressbar"' in content
    assert "Waiting</dt><dd>1 min 15 s" in content
    assert CANCEL_NOTE in content
    assert f'action="/jobs/{job.pk}/cancel"' in content


def test_job_page_shows_attempts_with_their_outcomes_and_the_reason(browser_client, workspace):
    job = admitted_job(workspace)
    claim = job_claim_next(worker_id="worker-7")
    job_fail(claim=claim, error="sheet is not a price list", transient=False)
    content = browser_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "worker-7" in content
    assert "Failed" in content
    assert "Needs attention:</strong> sheet is not a price list" in content
    assert Attempt.objects.get(job=job).outcome == "failed"


def test_job_page_links_the_review_for_reviewers_only(browser_client, reviewer, workspace):
    job = admitted_job(workspace, state=State.AWAITING_REVIEW)
    content = browser_client.get(f"/jobs/{job.pk}/").content.decode()
    assert f'href="/review/{job.pk}/"' not in content
    assert "A reviewer of the workspace approves or rejects it" in content
    reviewer_client = Client()
    reviewer_client.force_login(reviewer)
    content = reviewer_client.get(f"/jobs/{job.pk}/").content.decode()
    assert f'href="/review/{job.pk}/"' in content


def test_job_page_lists_the_published_items(browser_client, workspace):
    item = {
        "sku": "A-1",
        "description": "Bolt M8",
        "unit": "piece",
        "pack_size": None,
        "unit_price": "0.42",
        "currency": "EUR",
        "source": {"sheet": "Sheet1", "row": 2},
        "flags": [],
    }
    job = admitted_job(
        workspace,
        state=State.COMPLETED,
        finished_at=Now(),
        output={"items": [item]},
        result={"revision_id": 1, "item_count": 1},
    )
    content = browser_client.get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="job-items"' in content
    assert "Bolt M8" in content and "0.42" in content


def test_job_page_shows_one_page_of_items_with_links_to_the_others(browser_client, workspace):
    from catalog.pages import JOB_ITEMS_PAGE_SIZE

    items = [
        {
            "sku": f"S-{n:04d}",
            "description": "Bolt",
            "unit": None,
            "pack_size": None,
            "unit_price": "1.00",
            "currency": "EUR",
            "source": {"sheet": "Sheet1", "row": n + 2},
            "flags": [],
        }
        for n in range(2 * JOB_ITEMS_PAGE_SIZE + 5)
    ]
    job = admitted_job(
        workspace,
        state=State.COMPLETED,
        finished_at=Now(),
        output={"items": items},
        result={"revision_id": 1, "item_count": len(items)},
    )
    first = browser_client.get(f"/jobs/{job.pk}/").content.decode()
    assert f"Published items ({len(items)})" in first
    assert first.count("<td>S-") == JOB_ITEMS_PAGE_SIZE
    assert "S-0000" in first and f"S-{JOB_ITEMS_PAGE_SIZE:04d}" not in first
    assert 'href="?page=2" rel="next"' in first and 'rel="prev"' not in first
    last = browser_client.get(f"/jobs/{job.pk}/?page=3").content.decode()
    assert last.count("<td>S-") == 5 and f"S-{len(items) - 1:04d}" in last
    assert 'href="?page=2" rel="prev"' in last and 'rel="next"' not in last


def test_job_live_fragment_says_when_to_stop_polling(browser_client, workspace):
    job = admitted_job(workspace, state=State.CANCELLED, finished_at=Now())
    content = browser_client.get(f"/jobs/{job.pk}/live").content.decode()
    assert 'data-finished="true"' in content
    assert 'data-cancellable="false"' in content


@pytest.mark.parametrize("suffix", ["/", "/live"])
def test_job_page_of_another_workspace_is_identical_to_an_unknown_id(outsider, workspace, suffix):
    job = admitted_job(workspace)
    client = Client()
    client.force_login(outsider)
    theirs = client.get(f"/jobs/{job.pk}{suffix}")
    unknown = client.get(f"/jobs/{uuid.uuid4()}{suffix}")
    assert theirs.status_code == unknown.status_code == 404
    assert theirs.content == unknown.content
    assert comparable_headers(theirs) == comparable_headers(unknown)


def test_cancel_button_cancels_and_returns_to_the_job_page(browser_client, workspace):
    job = admitted_job(workspace)
    response = browser_client.post(f"/jobs/{job.pk}/cancel")
    assert response["Location"] == f"/jobs/{job.pk}/"
    assert Job.objects.get(pk=job.pk).state == State.CANCELLED


def test_cancel_button_of_a_finished_job_changes_nothing(browser_client, workspace):
    job = admitted_job(workspace, state=State.COMPLETED, finished_at=Now())
    response = browser_client.post(f"/jobs/{job.pk}/cancel", follow=True)
    assert b"can no longer be cancelled" in response.content
    assert Job.objects.get(pk=job.pk).state == State.COMPLETED


def test_cancel_button_naming_an_old_version_changes_nothing(browser_client, workspace):
    job = admitted_job(workspace)
    response = browser_client.post(f"/jobs/{job.pk}/cancel", {"version": job.version + 1}, follow=True)
    assert b"changed while you were looking" in response.content
    assert Job.objects.get(pk=job.pk).state == State.QUEUED


def test_job_page_cancel_form_names_the_version_on_screen(browser_client, workspace):
    job = admitted_job(workspace)
    content = browser_client.get(f"/jobs/{job.pk}/").content.decode()
    assert f'name="version" value="{job.version}"' in content
    assert f'data-version="{job.version}"' in content


def test_cancel_button_without_csrf_token_is_refused(member, workspace):
    job = admitted_job(workspace)
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    assert client.post(f"/jobs/{job.pk}/cancel").status_code == 403
    assert Job.objects.get(pk=job.pk).state == State.QUEUED


def test_cancel_of_another_workspaces_job_is_404_and_changes_nothing(outsider, workspace):
    job = admitted_job(workspace)
    client = Client()
    client.force_login(outsider)
    assert client.post(f"/jobs/{job.pk}/cancel").status_code == 404
    assert Job.objects.get(pk=job.pk).state == State.QUEUED


# --- the demo ---------------------------------------------------------------------------------


def test_seeddemo_twice_creates_the_demo_once(db, capsys):
    call_command("seeddemo")
    call_command("seeddemo")
    demo = Workspace.objects.get(slug="demo")
    user = demo.memberships.get().user
    assert Job.objects.filter(workspace=demo).count() == 2
    assert PriceSheet.objects.filter(workspace=demo).count() == 2
    assert (user.is_staff, user.is_superuser, user.check_password("demo-password")) == (True, True, True)
    assert demo.memberships.get().role == Membership.Role.ADMIN
    assert "demo-password" in capsys.readouterr().out
