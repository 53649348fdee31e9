"""An uploader's whole journey in real Chromium: sign in, upload, close the
tab before any worker runs, start a real worker, sign in again from a new
browser, and watch the job reach `completed` with its items."""

import re

import pytest

from jobs.models import Job, State
from tests.helpers import ROOT, wait_for

DEMO_SHEET = ROOT / "catalog" / "demo" / "demo-clean.csv"
JOB_URL = re.compile(r".*/jobs/([0-9a-f-]{36})/$")


def sign_in(page, base_url: str) -> None:
    page.goto(f"{base_url}/jobs/")
    page.wait_for_url(re.compile(r".*/accounts/login/.*"))
    page.fill("#id_username", "mia")
    page.fill("#id_password", "mia-password-1")
    page.click("button[type=submit]")
    page.wait_for_url(f"{base_url}/jobs/")


@pytest.mark.browser
@pytest.mark.processes
def test_job_survives_a_closed_tab_and_completes_in_another_browser(
    live_server, processes, new_context, member, settings, tmp_path, screenshot_path
):
    media = tmp_path / "media"
    settings.MEDIA_ROOT = media  # the live server stores the upload here ...

    first = new_context()
    page = first.new_page()
    sign_in(page, live_server.url)
    page.goto(f"{live_server.url}/jobs/new")
    page.fill("#id_supplier", "Demo Hardware")
    page.set_input_files("#id_file", str(DEMO_SHEET))
    page.click("button.primary[type=submit]")
    page.wait_for_url(JOB_URL)
    job_id = JOB_URL.match(page.url).group(1)
    assert page.get_attribute("#job-state", "data-state") == "queued"
    first.close()  # the tab is gone before any worker has run

    assert Job.objects.get(pk=job_id).state == State.QUEUED
    worker = processes.worker("browser-worker", MEDIA_ROOT=str(media))  # ... the worker reads it here

    second = new_context()
    page = second.new_page()
    sign_in(page, live_server.url)
    page.click(f"tr[data-job-id='{job_id}'] a")
    page.wait_for_url(f"{live_server.url}/jobs/{job_id}/")
    # The page polls its live fragment: the badge changes without a reload.
    page.wait_for_selector("#job-state[data-state='completed']", timeout=60_000)
    rows = page.locator("#job-items tbody tr")
    assert rows.count() == 12
    assert "DM-1001" in rows.first.inner_text()
    assert page.locator("#cancel-form").is_hidden()

    page.screenshot(path=str(screenshot_path("job-page.png")), full_page=True)
    job = wait_for(
        lambda: Job.objects.filter(pk=job_id, state=State.COMPLETED).first(),
        message="the job to be completed in the database",
    )
    assert job.result["item_count"] == 12
    assert worker.poll() is None, processes.output(worker)
