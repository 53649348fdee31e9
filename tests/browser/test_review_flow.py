"""A reviewer fixes a flagged extraction in real Chromium and publishes it,
by keyboard alone, under a strict Content-Security-Policy."""

import os

import pytest

from catalog.models import CatalogItem, CatalogRevision
from jobs.models import Job, State
from tests.review import flagged_job


def expect_text(locator, pattern: str):
    """Wait until the element's text matches `pattern` (a regular expression)."""
    import re

    from playwright.sync_api import expect

    expect(locator).to_have_text(re.compile(pattern))


# Only the loopback address: the live server must not listen elsewhere.
os.environ.setdefault("DJANGO_LIVE_TEST_SERVER_ADDRESS", "127.0.0.1")

STRICT_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


def strict_csp(context, live_server):
    """Serve every page of the live server with a strict policy: no inline
    script or style runs, so the page must work from its static files."""
    from playwright.sync_api import Error

    def add_policy(route):
        try:
            response = route.fetch(max_redirects=0)
            headers = {**response.headers, "content-security-policy": STRICT_CSP}
            route.fulfill(response=response, headers=headers)
        except Error:
            pass  # the page went away while its request was in flight

    context.route(f"{live_server.url}/**", add_policy)


def sign_in(context, live_server, username, password, next_path):
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/?next={next_path}")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.locator("input[name=password]").press("Enter")
    page.wait_for_url(f"{live_server.url}{next_path}")
    return page


def focus_grid(page, limit=80):
    """Tab from the top of the page until a grid cell has the focus."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.getAttribute('role')") == "gridcell":
            return
    raise AssertionError(f"no grid cell took the focus within {limit} Tab presses")


def active_cell(page):
    return page.evaluate("""() => { const c = document.activeElement;
        return [Number(c.parentNode.dataset.index), c.className.split(' ')[0]]; }""")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_reviewer_reviews_and_publishes_a_sheet_by_keyboard_alone(
    live_server, new_context, workspace, reviewer, screenshot_path
):
    job = flagged_job(workspace)
    context = new_context()
    strict_csp(context, live_server)
    errors = []
    page = sign_in(context, live_server, "rey", "rey-password-1", f"/review/{job.pk}/")
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.wait_for_selector("#review-grid[data-loaded=true]")
    assert page.locator("#flag-reasons li").count() == 2, page.locator("#flag-reasons").inner_text()
    assert page.locator("[data-index='1'] .c-unit_price").inner_text() == "0.40"  # as the sheet wrote it

    focus_grid(page)
    # The first flagged item is current: 0, SKU column.
    assert active_cell(page) == [0, "c-sku"]
    page.keyboard.press("Home")
    for _ in range(6):
        page.keyboard.press("ArrowRight")
    assert active_cell(page) == [0, "c-currency"]
    for _ in range(3):  # typing starts an edit; Enter keeps it and moves down
        page.keyboard.type("eur")
        page.keyboard.press("Enter")
    assert active_cell(page)[0] == 2  # Enter on the last item stays there
    page.keyboard.press("Shift+F8")  # the previous flagged item
    assert active_cell(page)[0] == 1
    page.keyboard.press("F8")  # the next one
    assert active_cell(page)[0] == 2
    page.keyboard.press("Home")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    assert active_cell(page) == [2, "c-unit"]
    page.keyboard.press("F2")
    page.keyboard.type("piece")
    page.keyboard.press("Escape")  # cancelled: nothing changes
    assert page.locator("[data-index='2'] .c-unit").inner_text().startswith("u")
    page.keyboard.press("Enter")
    page.keyboard.type("piece")
    page.keyboard.press("Enter")  # the server checks the unit, then it is kept
    expect_text(page.locator("[data-index='2'] .c-unit"), "^piece")
    page.keyboard.press("Control+z")
    assert page.locator("[data-index='2'] .c-unit").inner_text().startswith("u")
    page.keyboard.press("Control+y")
    assert page.locator("[data-index='2'] .c-unit").inner_text().startswith("piece")
    page.screenshot(path=str(screenshot_path("review-page.png")), full_page=True)

    page.keyboard.press("End")
    page.keyboard.press("Tab")  # out of the grid, to the actions
    for _ in range(10):
        if page.evaluate("document.activeElement.id") == "approve":
            break
        page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_selector("#approve-dialog[open]")
    summary = page.locator("#approve-summary").inner_text()
    assert "To publish: 3" in summary and "Changed by hand: 3" in summary
    assert page.evaluate("document.activeElement.id") == "approve-confirm"
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/review/")
    assert "published with 3 items" in page.locator(".messages li.success").inner_text()
    assert errors == []

    assert Job.objects.get(pk=job.pk).state == State.COMPLETED
    items = {i.sku: (i.unit, i.currency) for i in CatalogItem.objects.filter(revision__job=job)}
    assert items == {"A-1": ("pcs", "EUR"), "A-2": ("ea", "EUR"), "A-3": ("piece", "EUR")}

    # The supplier's first revision, its prices as the sheet wrote them (12.50, 0.40).
    revision = CatalogRevision.objects.get(job=job)
    page.goto(f"{live_server.url}/catalog/revisions/{revision.public_id}/")
    assert page.locator("h1").inner_text().startswith("Revision 1")
    assert {"12.50", "0.40", "0.90"} <= set(page.locator("td.num-cell").all_inner_texts())


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_two_reviewers_racing_publish_once_and_the_second_is_told(
    live_server, new_context, workspace, reviewer
):
    from accounts.models import Membership
    from accounts.services import membership_add

    membership_add(
        workspace=workspace, username="ria", role=Membership.Role.REVIEWER, password="ria-password-1"
    )
    job = flagged_job(workspace)
    pages = [
        sign_in(new_context(), live_server, name, f"{name}-password-1", f"/review/{job.pk}/")
        for name in ("rey", "ria")
    ]
    for page, currency in zip(pages, ("EUR", "USD"), strict=False):
        page.wait_for_selector("#review-grid[data-loaded=true]")
        page.select_option("#set-field", "currency")
        page.fill("#set-value", currency)
        page.select_option("#set-scope", "all")
        page.locator("#set-form button").click()
        page.locator("[data-index='2'] .c-unit").dblclick()
        page.keyboard.type("piece")
        page.keyboard.press("Enter")
        page.locator("#approve").click()
        page.wait_for_selector("#approve-dialog[open]")
    pages[0].locator("#approve-confirm").click()
    pages[0].wait_for_url(f"{live_server.url}/review/")
    pages[1].locator("#approve-confirm").click()
    pages[1].wait_for_selector("#grid-message.error")
    assert "approved by rey" in pages[1].locator("#grid-message").inner_text()
    assert CatalogRevision.objects.filter(job=job).count() == 1
    assert {i.currency for i in CatalogItem.objects.filter(revision__job=job)} == {"EUR"}
