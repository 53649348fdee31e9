"""The grid's bulk tools in real Chromium: selection, set for the selection,
fill down, omit and restore, find and replace, a unit word mapped for the
sheet, saving, and the warning before leaving with unsaved edits."""

import pytest

from jobs.models import Job
from tests.browser.test_review_flow import expect_text, sign_in
from tests.review import flagged_job


def open_grid(context, live_server, job):
    page = sign_in(context, live_server, "rey", "rey-password-1", f"/review/{job.pk}/")
    page.wait_for_selector("#review-grid[data-loaded=true]")
    return page


def cell(page, index, name):
    return page.locator(f"[data-index='{index}'] .c-{name}")


def value(page, index, name):
    """What a cell shows, without the words only screen readers get."""
    return cell(page, index, name).inner_text().replace("(flagged)", "").strip()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_bulk_tools_change_the_grid_and_are_saved(live_server, new_context, workspace, reviewer):
    job = flagged_job(workspace)
    page = open_grid(new_context(), live_server, job)

    cell(page, 0, "num").click()
    cell(page, 1, "num").click(modifiers=["Shift"])
    assert page.locator("#selection-count").inner_text() == "2 selected"
    page.select_option("#set-field", "currency")
    page.fill("#set-value", "usd")
    page.select_option("#set-scope", "selected")
    page.locator("#set-form button").click()
    assert [value(page, n, "currency") for n in range(3)] == ["USD", "USD", ""]

    cell(page, 2, "num").click()  # the selection is now 0, 1 and 2
    cell(page, 0, "currency").click()
    page.keyboard.press("Control+d")  # fill down from the selection's first row
    assert value(page, 2, "currency") == "USD"

    page.fill("#map-from", "u")
    page.fill("#map-to", "pc")
    page.locator("#map-form button").click()
    expect_text(cell(page, 2, "unit"), "^pc")  # once the server has checked the unit

    page.select_option("#replace-field", "description")
    page.fill("#replace-find", "M8")
    page.fill("#replace-with", "M10")
    page.locator("#replace-form button").click()
    assert value(page, 1, "description") == "Washer M10"

    cell(page, 0, "num").click()
    cell(page, 2, "num").click()  # only item 1 (the second) stays selected
    page.locator("#toggle-omit").click()
    assert "omitted" in cell(page, 1, "state").inner_text()
    page.locator("#toggle-omit").click()
    page.locator("#toggle-omit").click()

    page.locator("#save").click()
    expect_text(page.locator("#grid-message"), "^Saved")
    items = Job.objects.get(pk=job.pk).output["items"]
    assert [i["currency"] for i in items] == ["USD", "USD", "USD"]
    assert [i["description"] for i in items] == ["Hex bolt M10", "Washer M10", "Nut M10"]
    assert items[2]["unit"] == "pc" and items[2]["provenance"]["unit"]["extracted"] == "u"
    assert [bool(i.get("omitted")) for i in items] == [False, True, False]
    assert "1 omitted" in page.locator(".summary").inner_text()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_leaving_with_unsaved_edits_asks_first(live_server, new_context, workspace, reviewer):
    job = flagged_job(workspace)
    page = open_grid(new_context(), live_server, job)
    cell(page, 0, "description").dblclick()
    page.keyboard.type("Hexagon bolt")
    page.keyboard.press("Enter")
    with page.expect_event("dialog") as asked:
        page.close(run_before_unload=True)
    assert asked.value.type == "beforeunload"
    asked.value.dismiss()
    assert not page.is_closed()
    # The page answers once the dismissal is through; then it is closed
    # here, not by the context (closing the context with the dismissal in
    # flight crashed Chromium about one run in five).
    assert page.evaluate("document.visibilityState") == "visible"
    page.close()
