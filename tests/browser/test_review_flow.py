"""A reviewer fixes a flagged extraction in real Chromium and publishes it."""

import os

import pytest

from catalog.models import CatalogRevision
from jobs.models import Job, State
from tests.review import flagged_job

# Only the loopback address: the live server must not listen elsewhere.
os.environ.setdefault("DJANGO_LIVE_TEST_SERVER_ADDRESS", "127.0.0.1")


def sign_in(context, live_server, username, password, next_path):
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/?next={next_path}")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.locator("form:has(input[name=password]) [type=submit]").click()
    page.wait_for_url(f"{live_server.url}{next_path}")
    return page


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_reviewer_fixes_currency_and_unit_approves_and_sees_the_items_in_the_catalog(
        live_server, new_context, workspace, reviewer, screenshot_path):
    job = flagged_job(workspace)
    page = sign_in(new_context(), live_server, "rey", "rey-password-1", "/review/")

    queue_row = page.locator(f"tr[data-job='{job.pk}']")
    assert "4 flags" in queue_row.inner_text()
    queue_row.get_by_role("link", name="Review").click()
    page.wait_for_url(f"{live_server.url}/review/{job.pk}/")

    assert page.locator("td.cell-flagged").count() == 4
    assert page.locator("#source-pane tr.row-cited").count() == 3
    assert "does not say what is counted" in page.locator("#item-2 td.field-unit").get_attribute("title")
    assert "does not say what is counted" in page.locator("#item-2-flags [data-field=unit]").inner_text()
    assert page.locator("#job-state").inner_text() == "Awaiting Review"

    page.locator("#item-2 td.num").click()
    assert page.locator("#src-0-6").get_attribute("class").split() == [
        "row-cited", "row-cited-flagged", "row-current"]

    page.select_option("#currency-override", "EUR")
    page.fill("input[name='item-2-unit']", "piece")
    page.locator("#item-2 td.num").click()
    page.screenshot(path=str(screenshot_path("review-page.png")), full_page=True)

    with page.expect_request(lambda request: request.method == "POST") as posted:
        page.locator("#approve").click()
    form = posted.value.post_data
    # Only the changed cells travel: large sheets stay small requests.
    assert "item-2-unit=piece" in form and "currency_override=EUR" in form
    assert "item-0-sku" not in form
    page.wait_for_selector(".messages li.success")
    assert "published with 3 items" in page.locator(".messages li.success").inner_text()
    assert "approved by rey" in page.locator("#job-history").inner_text()
    assert Job.objects.get(pk=job.pk).state == State.COMPLETED
    assert CatalogRevision.objects.filter(job=job).count() == 1

    page.goto(f"{live_server.url}/catalog/")
    page.get_by_role("link", name="Acme Fasteners").click()
    rows = page.locator("table#items tbody tr")
    assert rows.count() == 3
    texts = [" ".join(rows.nth(n).inner_text().split()) for n in range(3)]
    assert texts == ["A-1 Hex bolt M8 pcs 12.50 EUR Prices:4",
                     "A-2 Washer M8 ea 0.40 EUR Prices:5",
                     "A-3 Nut M8 piece 0.90 EUR Prices:6"]
