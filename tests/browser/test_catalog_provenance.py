"""In real Chromium: the catalog page marks the values a reviewer set (who,
when), and the revision page links its job, its review and the decisions."""

import pytest

from tests.browser.test_review_flow import sign_in
from tests.review import reviewed_revision


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_revision_page_shows_who_set_each_value(live_server, new_context, workspace, reviewer):
    revision = reviewed_revision(workspace, reviewer)
    page = sign_in(
        new_context(), live_server, "rey", "rey-password-1", f"/catalog/revisions/{revision.public_id}/"
    )
    row = page.locator("#items tbody tr", has_text="A-3")
    unit = row.locator("td").nth(2)
    assert unit.inner_text().startswith("piece")
    assert "set-by-reviewer" in unit.get_attribute("class")
    assert unit.locator(".set-mark").get_attribute("title").startswith("Set by rey at ")
    assert row.locator("td").nth(0).locator(".set-mark").count() == 0  # the SKU is as extracted

    page.locator("#revision-decisions").click()
    page.wait_for_url(f"{live_server.url}/review/{revision.job_id}/#decisions")
    assert "Approve" in page.locator("table.decisions").inner_text()
