"""Layouts that hold, in real Chromium: at 390 px no element of a main page
(mapping included) reaches past the viewport unless it sits in a box that
scrolls on its own, and no table cell breaks a number over two lines; at
1440 px the review grid shows every column without scrolling sideways and
a long price whole once its cell has the focus."""

import json
from decimal import Decimal

import pytest

from tests.browser.test_pages_a11y import pages_data, sign_in  # noqa: F401 (a fixture)
from tests.review import flagged_job, published_job, sheet_items

PHONE = {"width": 390, "height": 844}
WIDE = {"width": 1440, "height": 900}

# Elements past the right edge of the viewport that are not inside a box
# scrolling sideways on its own (overflow-x auto or scroll).
OUTSIDE = """() => {
  const width = document.documentElement.clientWidth;
  const inScroller = (el) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if ((o === "auto" || o === "scroll" || o === "hidden") && p.scrollWidth > p.clientWidth - 1) return true;
    }
    return false;
  };
  const out = [];
  for (const el of document.querySelectorAll("body *")) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || getComputedStyle(el).position === "fixed") continue;
    if (r.right > width + 1 && !inScroller(el)) out.push(el.tagName + "#" + el.id + "." + el.className + " " + Math.round(r.right));
  }
  return out.slice(0, 10);
}"""

# Table cells holding a number whose text lies on more than one line.
WRAPPED_NUMBERS = """() => {
  const out = [];
  for (const cell of document.querySelectorAll("td, th, [role=gridcell]")) {
    const text = cell.textContent.trim();
    if (!/^[-+]?[0-9][0-9.,\\u00a0 ]*$/.test(text)) continue;
    const range = document.createRange();
    range.selectNodeContents(cell);
    const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
    if (tops.size > 1) out.push(text);
  }
  return out;
}"""


@pytest.fixture
def long_price_revision(workspace):
    items = sheet_items("EUR")[:2]
    items[0]["unit_price"] = "1234567.125000"
    return published_job(workspace, items=items).revision


def layout_pages(data, revision, mapping_job):
    flagged, published = data["flagged"], data["published"]
    return [
        "/jobs/",
        "/jobs/new",
        f"/jobs/{flagged.pk}/",
        f"/jobs/{published.pk}/",
        "/review/",
        f"/review/{flagged.pk}/",
        f"/review/{flagged.pk}/mapping/",
        f"/review/{mapping_job.pk}/mapping/",
        "/catalog/",
        f"/catalog/suppliers/{revision.supplier.public_id}/",
        f"/catalog/revisions/{revision.public_id}/",
        "/ops/",
    ]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_no_page_is_wider_than_a_phone_and_no_number_wraps(
    live_server,
    browser,
    workspace,
    reviewer,
    pages_data,  # noqa: F811 (the fixture imported above)
    long_price_revision,
):
    context = browser.new_context(viewport=PHONE)
    context.set_default_timeout(15_000)
    try:
        page = sign_in(context, live_server, "ada", "ada-password-1")
        problems = {}
        for path in layout_pages(pages_data, long_price_revision, flagged_job(workspace)):
            page.goto(live_server.url + path)
            page.wait_for_load_state("networkidle")
            outside = page.evaluate(OUTSIDE)
            wrapped = page.evaluate(WRAPPED_NUMBERS)
            sideways = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            if outside or wrapped or sideways > 0:
                problems[path] = {"outside": outside, "wrapped": wrapped, "sideways": sideways}
        assert problems == {}, json.dumps(problems, indent=1)
    finally:
        context.close()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_grid_fits_a_wide_screen_and_shows_a_long_price_whole_on_focus(
    live_server, browser, workspace, reviewer
):
    items = sheet_items()
    items[0]["unit_price"] = "1234567.125000"
    job = flagged_job(workspace, items=items)
    context = browser.new_context(viewport=WIDE)
    context.set_default_timeout(15_000)
    try:
        from tests.browser.test_review_flow import sign_in as sign_in_to

        page = sign_in_to(context, live_server, "rey", "rey-password-1", f"/review/{job.pk}/")
        page.wait_for_selector("#review-grid[data-loaded=true]")
        box = page.evaluate("""() => { const b = document.getElementById('grid-box');
            return [b.scrollWidth, b.clientWidth]; }""")
        assert box[0] <= box[1], box  # no sideways scroll: Source and State in view
        state = page.locator("[data-index='0'] .c-state").bounding_box()
        assert state["x"] + state["width"] <= WIDE["width"]
        price = page.locator("[data-index='0'] .c-unit_price")
        price.click()
        text = price.inner_text().replace("(flagged)", "").strip()
        assert Decimal(text.replace(",", "")) == Decimal("1234567.125")
        shown = page.evaluate("""() => { const c = document.querySelector("[data-index='0'] .c-unit_price");
            const range = document.createRange(); range.selectNodeContents(c);
            const r = range.getBoundingClientRect(); const b = c.getBoundingClientRect();
            return [r.width, getComputedStyle(c).overflow, b.width]; }""")
        assert shown[0] <= shown[2] or shown[1] == "visible", shown
        assert price.get_attribute("title").startswith(text)
    finally:
        context.close()
