"""A refused sheet (a rate card: prices by weight band and zone) is mapped by a reviewer in real
Chromium, read again, approved and published; the supplier's next sheet of
the same layout then publishes without review."""

import pytest

from catalog.models import CatalogRevision, SupplierLayout
from catalog.services import pricesheet_store, supplier_get_or_create
from jobs.models import Job, State
from jobs.services import job_admit
from jobs.worker import Worker
from tests.browser.test_review_flow import sign_in, strict_csp
from tests.review.test_mapping_api import bands_csv

SUPPLIER = "Zorblat Trading"


def admit(workspace, data: bytes, name: str) -> Job:
    supplier = supplier_get_or_create(workspace=workspace, name=SUPPLIER)
    sheet = pricesheet_store(workspace=workspace, chunks=[data], original_name=name, supplier=supplier)
    job, _ = job_admit(
        workspace_id=workspace.pk,
        kind="parse_sheet",
        payload={"sheet_id": str(sheet.pk), "supplier_id": supplier.pk},
        fingerprint=sheet.sha256,
    )
    return job


def run_until_idle() -> None:
    worker = Worker(worker_id="browser-test")
    while worker.run_one():
        pass


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_reviewer_maps_a_refused_sheet_publishes_it_and_the_next_sheet_publishes_by_itself(
    live_server, new_context, workspace, reviewer, settings, tmp_path, screenshot_path
):
    settings.MEDIA_ROOT = tmp_path / "media"
    job = admit(workspace, bands_csv(), "zorblat-march.csv")
    run_until_idle()
    job.refresh_from_db()
    assert job.state == State.NEEDS_ATTENTION

    context = new_context()
    strict_csp(context, live_server)  # the pages work from their static files alone
    page = sign_in(context, live_server, "rey", "rey-password-1", f"/jobs/{job.pk}/")
    errors = []  # (page, message) of script errors and blocked inline code
    page.on("pageerror", lambda error: errors.append((page.url, str(error))))
    page.on("console", lambda m: errors.append((page.url, m.text)) if m.type == "error" else None)
    page.get_by_role("link", name="Map the columns").click()
    page.wait_for_url(f"{live_server.url}/review/{job.pk}/mapping/")
    sheet = page.locator("section.mapped-sheet[data-sheet='Sheet1']")
    assert "looks like a rate card" in page.locator("#job-reason").inner_text()
    assert sheet.locator("tbody tr[data-row='2']").inner_text().split("\t")[1:] == [
        "0-1 kg",
        "0.40",
        "0.35",
        "0.30",
    ]

    page.fill("input[name='sheet-0-header_row']", "1")
    assert "header-row-current" in sheet.locator("tbody tr[data-row='1']").get_attribute("class")
    page.select_option("select[name='sheet-0-col-A']", "description")
    page.select_option("select[name='sheet-0-col-C']", "unit_price")
    # One column per role: choosing the price for B hands C back to "not read".
    page.select_option("select[name='sheet-0-col-B']", "unit_price")
    assert page.locator("select[name='sheet-0-col-C']").input_value() == "other"
    assert "role-unit_price" in sheet.locator("tbody tr[data-row='2'] td[data-col='1']").get_attribute(
        "class"
    )
    page.select_option("#sheet-currency", "EUR")
    page.screenshot(path=str(screenshot_path("mapping-page.png")), full_page=True)

    page.locator("#apply-mapping").click()
    page.wait_for_url(f"{live_server.url}/jobs/{job.pk}/")
    assert "Column mapping applied" in page.locator(".messages li.success").inner_text()
    assert Job.objects.get(pk=job.pk).state == State.QUEUED

    run_until_idle()
    # The job page polls its live part: the review link appears without a reload.
    page.get_by_role("link", name="Open the review").click()
    page.wait_for_url(f"{live_server.url}/review/{job.pk}/")
    page.wait_for_selector("#review-grid[data-loaded=true]")
    assert page.locator("#review-grid [data-index]").count() == 4
    assert page.locator("#flag-reasons li").count() == 0
    page.locator("#approve").click()
    page.wait_for_selector("#approve-dialog[open]")
    assert "To publish: 4" in page.locator("#approve-summary").inner_text()
    page.locator("#approve-confirm").click()
    page.wait_for_url(f"{live_server.url}/review/")
    assert "published with 4 items" in page.locator(".messages li.success").inner_text()
    assert Job.objects.get(pk=job.pk).state == State.COMPLETED
    assert SupplierLayout.objects.filter(supplier__name=SUPPLIER, approved_by_name="rey").count() == 1

    following = admit(
        workspace,
        bands_csv(("0-0.5 kg", "0.5-1 kg", "1-3 kg", "3-5 kg", "5-10 kg", "10-20 kg")),
        "zorblat-april.csv",
    )
    run_until_idle()
    page.goto(f"{live_server.url}/jobs/{following.pk}/")
    assert page.locator("#job-state").get_attribute("data-state") == "completed"
    layout_line = page.locator("#job-layout").inner_text()
    assert "read with the layout remembered for this supplier, approved by rey" in layout_line
    rows = page.locator("#job-items tbody tr")
    assert rows.count() == 6
    assert "0-0.5 kg" in page.locator("#job-items").inner_text()
    assert "EUR" in rows.first.inner_text()
    assert CatalogRevision.objects.filter(job=following, approved_by__isnull=True).count() == 1
    assert [e for e in errors if "/mapping/" in e[0]] == []
