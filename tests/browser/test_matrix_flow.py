"""A price matrix in real Chromium: the extractor proposes it for review; a
reviewer confirms it on the mapping page (product, unit of the sizes,
currency), the sheet is read again, its cells appear as items in the review
grid and are published; the supplier's next matrix then publishes by itself."""

import pytest

from catalog.models import CatalogRevision, SupplierLayout
from jobs.models import Job, State
from tests.browser.axe import blocking_violations
from tests.browser.test_mapping_flow import SUPPLIER, admit, run_until_idle
from tests.browser.test_review_flow import sign_in, strict_csp
from tests.catalog import matrixgen


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_reviewer_confirms_a_proposed_matrix_and_its_cells_become_published_items(
    live_server, new_context, workspace, reviewer, settings, tmp_path, screenshot_path
):
    settings.MEDIA_ROOT = tmp_path / "media"
    job = admit(workspace, matrixgen.width_by_height().data, "blinds-march.csv")
    run_until_idle()
    job.refresh_from_db()
    assert job.state == State.AWAITING_REVIEW

    context = new_context()
    strict_csp(context, live_server)  # the page works from its static files alone
    page = sign_in(context, live_server, "rey", "rey-password-1", f"/review/{job.pk}/")
    errors = []
    page.on("pageerror", lambda error: errors.append((page.url, str(error))))
    page.on("console", lambda m: errors.append((page.url, m.text)) if m.type == "error" else None)
    page.locator("#mapping-link").click()
    page.wait_for_url(f"{live_server.url}/review/{job.pk}/mapping/")

    sheet = page.locator("section.mapped-sheet[data-sheet='Sheet1']")
    # The proposal: read as a matrix, its body and labels filled in, the body marked.
    assert page.locator("input[name='sheet-0-mode'][value='matrix']").is_checked()
    assert "mode-matrix" in sheet.get_attribute("class")
    assert page.locator("input[name='sheet-0-matrix-body']").input_value() == "B3:F6"
    assert page.locator("input[name='sheet-0-matrix-row_labels']").input_value() == "A"
    assert page.locator("input[name='sheet-0-matrix-column_header_rows']").input_value() == "2"
    assert "19 priced cells became items" in page.locator("#sheet-0-matrix-summary").inner_text()
    assert "in-body" in sheet.locator("tbody tr[data-row='3'] td[data-col='1']").get_attribute("class")
    assert "in-body" not in (
        sheet.locator("tbody tr[data-row='2'] td[data-col='1']").get_attribute("class") or ""
    )
    assert "matrix-header" in sheet.locator("tbody tr[data-row='2']").get_attribute("class")
    assert not page.locator("select[name='sheet-0-col-A']").is_visible()
    assert blocking_violations(page) == []  # the matrix form is labeled and readable

    # A body typed too large is refused in words, and nothing changes.
    page.fill("input[name='sheet-0-matrix-body']", "B3:Z6")
    page.locator("#apply-mapping").click()
    assert "reaches outside the sheet" in page.locator("#mapping-errors").inner_text()
    assert Job.objects.get(pk=job.pk).state == State.AWAITING_REVIEW

    page.fill("input[name='sheet-0-matrix-body']", "B3:F6")
    page.fill("input[name='sheet-0-matrix-product']", "Roller blind")
    page.fill("input[name='sheet-0-matrix-dimension_unit']", "cm")
    page.select_option("#sheet-currency", "EUR")
    page.screenshot(path=str(screenshot_path("matrix-mapping-page.png")), full_page=True)
    page.locator("#apply-mapping").click()
    page.wait_for_url(f"{live_server.url}/jobs/{job.pk}/")
    assert "Column mapping applied" in page.locator(".messages li.success").inner_text()

    run_until_idle()
    page.get_by_role("link", name="Open the review").click()
    page.wait_for_url(f"{live_server.url}/review/{job.pk}/")
    page.wait_for_selector("#review-grid[data-loaded=true]")
    assert page.locator("#review-grid [data-index]").count() >= 10  # the grid draws the rows in view
    assert "Roller blind, 60 × 100 cm" in page.locator("#review-grid").inner_text()
    assert page.locator("#flag-reasons li").count() == 0
    # The source pane marks the cited cell of the current item, not only its row.
    page.locator("#review-grid [data-index='0']").first.click()
    assert page.locator("#source-rows td.cell-current").inner_text() == "60.00"
    assert "Sheet1:B3" in page.locator("#review-grid [data-index='0']").first.inner_text()
    page.locator("#approve").click()
    page.wait_for_selector("#approve-dialog[open]")
    assert "To publish: 19" in page.locator("#approve-summary").inner_text()
    page.locator("#approve-confirm").click()
    page.wait_for_url(f"{live_server.url}/review/")
    assert "published with 19 items" in page.locator(".messages li.success").inner_text()
    assert SupplierLayout.objects.filter(supplier__name=SUPPLIER, approved_by_name="rey").count() == 1

    following = admit(
        workspace,
        matrixgen.width_by_height(heights=(100, 120, 140, 160, 180), seed=2).data,
        "blinds-april.csv",
    )
    run_until_idle()
    page.goto(f"{live_server.url}/jobs/{following.pk}/")
    assert page.locator("#job-state").get_attribute("data-state") == "completed"
    assert "read with the layout remembered for this supplier" in page.locator("#job-layout").inner_text()
    assert "Roller blind, 140 × 180 cm" in page.locator("#job-items").inner_text()
    assert CatalogRevision.objects.get(job=following).item_count == 24
    # Script errors only: the refused body's 422 answer is logged as a failed load, on purpose.
    assert [e for e in errors if "/mapping/" in e[0] and "status of 422" not in e[1]] == []
