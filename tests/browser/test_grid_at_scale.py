"""The grid on a sheet of several pages in real Chromium: saving keeps the
reviewer's place, and a filter by flag code acts on every row it picks,
across pages, in one step that one undo takes back."""

import pytest

from jobs.models import Job
from tests.browser.test_grid_tools import cell, expect_text, open_grid
from tests.review import flagged_job

COUNT = 450
EVERY = 7  # every 7th item has the unit "u", which no unit table knows


def big_job(workspace):
    rows = [["SKU", "Description", "Unit", "Price", "Currency"]]
    items = []
    for n in range(COUNT):
        sku, unit, price = f"S-{n:04d}", "u" if n % EVERY == 0 else "pcs", f"{n + 1}.25"
        rows.append([sku, f"Item {n}", unit, price, "EUR"])
        items.append(
            {
                "sku": sku,
                "description": f"Item {n}",
                "unit": unit,
                "pack_size": None,
                "unit_price": price,
                "currency": "EUR",
                "source": {"sheet": "Prices", "row": n + 2},
            }
        )
    return flagged_job(workspace, items=items, table={"sheets": [{"name": "Prices", "rows": rows}]})


def active(page):
    return page.evaluate("""() => { const c = document.activeElement;
        return [Number(c.parentNode.dataset.index), c.className.split(' ')[0]]; }""")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_saving_keeps_the_focused_cell_and_the_scroll_position(live_server, new_context, workspace, reviewer):
    job = big_job(workspace)
    page = open_grid(new_context(), live_server, job)
    page.evaluate("window.stayedOnThePage = true")
    page.goto(f"{live_server.url}/review/{job.pk}/?item=300")
    page.wait_for_selector("#review-grid[data-loaded=true]")
    page.evaluate("window.stayedOnThePage = true")
    page.wait_for_selector("[data-index='300']")
    cell(page, 300, "description").click()
    page.keyboard.press("Enter")
    page.keyboard.type("Renamed by hand")
    page.keyboard.press("Enter")  # kept, and the next item is current
    assert active(page) == [301, "c-description"]
    scrolled = page.evaluate("document.getElementById('grid-viewport').scrollTop")

    page.keyboard.press("Control+s")
    expect_text(page.locator("#grid-message"), "^Saved")
    assert page.evaluate("window.stayedOnThePage") is True  # no reload
    assert active(page) == [301, "c-description"]
    assert page.evaluate("document.getElementById('grid-viewport').scrollTop") == scrolled
    assert page.locator("#job-version").inner_text() == str(job.version + 1)
    assert Job.objects.get(pk=job.pk).output["items"][300]["description"] == "Renamed by hand"
    assert "by-hand" in cell(page, 300, "description").get_attribute("class")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_skip_link_leads_to_the_grid(live_server, new_context, workspace, reviewer):
    page = open_grid(new_context(), live_server, flagged_job(workspace))
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "skip-to-grid"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.getAttribute('role')") == "gridcell"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_filtering_to_one_code_omits_its_rows_on_every_page_in_one_undoable_step(
    live_server, new_context, workspace, reviewer
):
    job = big_job(workspace)
    wanted = [n for n in range(COUNT) if n % EVERY == 0]
    page = open_grid(new_context(), live_server, job)
    page.select_option("#filter-flag", "ambiguous_unit")
    page.locator("#filter-form button[type=submit]").click()
    expect_text(page.locator("#view-count"), f"^{len(wanted)} of {COUNT} items")
    shown = page.locator("#grid-body [role=row]").evaluate_all(
        "rows => rows.map(r => Number(r.dataset.index))"
    )
    assert shown and set(shown) <= set(wanted)

    page.locator("#select-shown").click()
    assert page.locator("#selection-count").inner_text() == f"{len(wanted)} selected"
    page.locator("#toggle-omit").click()
    assert f"unsaved: {len(wanted)} omitted" in page.locator("#view-count").inner_text()
    assert "omitted" in cell(page, wanted[0], "state").inner_text()

    page.locator("#undo").click()  # one step takes back the whole selection
    assert "unsaved" not in page.locator("#view-count").inner_text()
    assert "omitted" not in cell(page, wanted[0], "state").inner_text()
    page.locator("#redo").click()
    page.locator("#save").click()
    expect_text(page.locator("#grid-message"), "^Saved")
    items = Job.objects.get(pk=job.pk).output["items"]
    assert [n for n, item in enumerate(items) if item.get("omitted")] == wanted
    assert f"{len(wanted)} omitted" in page.locator("#flag-summary").inner_text()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_cell_refuses_a_value_not_of_its_kind_and_a_fixed_cell_drops_its_mark(
    live_server, new_context, workspace, reviewer
):
    page = open_grid(new_context(), live_server, flagged_job(workspace))
    currency = cell(page, 0, "currency")
    assert "cell-flagged" in currency.get_attribute("class")
    currency.dblclick()
    page.keyboard.type("dollar")
    page.keyboard.press("Enter")
    editor = currency.locator("input")
    assert editor.input_value() == "dollar"  # stays in the cell, not committed
    assert editor.get_attribute("aria-invalid") == "true"
    assert "is not a currency" in page.locator("#grid-message").inner_text()
    assert page.locator("#undo").is_disabled()

    editor.fill("usd")
    page.keyboard.press("Enter")
    assert currency.inner_text() == "USD"
    assert "cell-flagged" not in currency.get_attribute("class")  # at once, before saving

    unit = cell(page, 2, "unit")
    unit.dblclick()
    page.keyboard.type("zz")
    page.keyboard.press("Enter")
    expect_text(page.locator("#grid-message"), "Not kept: .*'uzz'|Not kept: .*'zz'")
    page.keyboard.press("Escape")

    page.select_option("#set-field", "currency")
    page.fill("#set-value", "EURO")
    page.locator("#set-form button").click()
    assert "is not a currency" in page.locator("#grid-message").inner_text()
    assert cell(page, 1, "currency").inner_text().replace("(flagged)", "").strip() == ""
