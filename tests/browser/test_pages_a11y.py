"""Every page in real Chromium: no serious or critical axe-core violation, no
sideways page scroll at 390 px, Review links only for reviewers, styled
error pages, and a cancel that asks first."""

import uuid

import pytest

from accounts.models import Membership
from accounts.services import membership_add
from jobs.models import Job, State
from tests.browser.axe import blocking_violations
from tests.review import flagged_job, published_job, sheet_items

PHONE = {"width": 390, "height": 844}


def sign_in(context, live_server, username, password):
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.locator("input[name=password]").press("Enter")
    page.wait_for_url(f"{live_server.url}/jobs/")
    return page


def sideways_overflow(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


@pytest.fixture
def pages_data(workspace):
    admin = membership_add(
        workspace=workspace, username="ada", role=Membership.Role.ADMIN, password="ada-password-1"
    ).user
    admin.is_staff = True
    admin.save(update_fields=["is_staff"])
    from django.contrib.auth.models import Permission

    admin.user_permissions.add(Permission.objects.get(codename="view_job", content_type__app_label="jobs"))
    flagged = flagged_job(workspace)
    published = published_job(workspace, items=sheet_items("EUR")[:2])
    return {"flagged": flagged, "published": published, "revision": published.revision}


def every_page(data):
    flagged, published, revision = data["flagged"], data["published"], data["revision"]
    return [
        "/jobs/",
        "/jobs/new",
        f"/jobs/{flagged.pk}/",
        f"/jobs/{published.pk}/",
        "/review/",
        f"/review/{flagged.pk}/",
        f"/review/{published.pk}/",
        "/catalog/",
        f"/catalog/suppliers/{revision.supplier_id}/",
        f"/catalog/revisions/{revision.pk}/",
        "/ops/",
        f"/jobs/{uuid.uuid4()}/",
        "/no-such-page/",
    ]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 900}, PHONE], ids=["desktop", "phone"])
def test_every_page_has_no_serious_accessibility_violation_and_no_sideways_scroll(
    live_server, browser, workspace, reviewer, pages_data, viewport
):
    context = browser.new_context(viewport=viewport)
    context.set_default_timeout(15_000)
    try:
        login = context.new_page()
        login.goto(f"{live_server.url}/accounts/login/")
        problems = {"/accounts/login/": blocking_violations(login)}
        widths = {"/accounts/login/": sideways_overflow(login)}
        page = sign_in(context, live_server, "ada", "ada-password-1")
        for path in every_page(pages_data):
            page.goto(f"{live_server.url}{path}")
            if path.startswith("/review/") and path != "/review/":
                page.wait_for_selector("#review-grid[data-loaded=true]")
            problems[path] = blocking_violations(page)
            widths[path] = sideways_overflow(page)
        found = [f"{path}: {line}" for path, lines in problems.items() for line in lines]
        assert not found, "\n".join(found)
        wide = [f"{path}: {width}px too wide" for path, width in widths.items() if width > 0]
        assert not wide, "\n".join(wide)
    finally:
        context.close()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_grid_scrolls_in_its_own_box_on_a_phone(live_server, browser, workspace, reviewer):
    items = [{**sheet_items()[0], "sku": f"A-{n}"} for n in range(60)]
    job = flagged_job(workspace, items=items)
    context = browser.new_context(viewport=PHONE)
    try:
        page = sign_in(context, live_server, "rey", "rey-password-1")
        page.goto(f"{live_server.url}/review/{job.pk}/")
        page.wait_for_selector("#review-grid[data-loaded=true]")
        assert sideways_overflow(page) <= 0
        box = page.evaluate("""() => { const b = document.getElementById('grid-box');
            const v = document.getElementById('grid-viewport');
            return [b.scrollWidth > b.clientWidth, v.scrollHeight > v.clientHeight]; }""")
        assert box == [True, True]
    finally:
        context.close()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_member_without_the_reviewer_role_sees_no_review_link_and_a_styled_403(
    live_server, new_context, workspace, member
):
    job = flagged_job(workspace)
    page = sign_in(new_context(), live_server, "mia", "mia-password-1")
    assert page.locator("nav a", has_text="Review").count() == 0
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    assert page.locator("#review-card").count() == 1
    assert page.locator("#review-card a").count() == 0
    assert "A reviewer of the workspace approves" in page.locator("#review-card").inner_text()
    response = page.goto(f"{live_server.url}/review/{job.pk}/")
    assert response.status == 403
    assert "Only reviewers and admins" in page.locator("#error-page").inner_text()
    assert page.locator("nav a", has_text="Jobs").count() == 1
    assert blocking_violations(page) == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_reviewer_sees_review_links_and_flag_counts_on_the_job_page(
    live_server, new_context, workspace, reviewer
):
    job = flagged_job(workspace)
    page = sign_in(new_context(), live_server, "rey", "rey-password-1")
    assert page.locator("nav a", has_text="Review").count() == 1
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    card = page.locator("#review-card").inner_text()
    assert "missing_currency" in card and "on 3 items" in card and "ambiguous_unit" in card
    page.locator("#review-card a", has_text="first: item 3").click()
    page.wait_for_selector("#review-grid[data-loaded=true]")
    assert page.evaluate("document.activeElement.parentNode.dataset.index") == "2"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_unknown_pages_are_a_styled_404_with_the_navigation(live_server, new_context, reviewer):
    page = sign_in(new_context(), live_server, "rey", "rey-password-1")
    response = page.goto(f"{live_server.url}/no-such-page/")
    assert response.status == 404
    assert "This page does not exist" in page.locator("#error-page").inner_text()
    assert page.locator("nav a", has_text="Catalog").count() == 1


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_cancel_asks_first_and_says_a_model_call_in_flight_is_not_stopped(
    live_server, new_context, workspace, reviewer
):
    job = flagged_job(workspace)
    page = sign_in(new_context(), live_server, "rey", "rey-password-1")
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.locator("#cancel-form button").click()
    assert "model call already in flight is not stopped" in asked[0]
    assert Job.objects.get(pk=job.pk).state == State.AWAITING_REVIEW
    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_navigation():
        page.locator("#cancel-form button").click()
    assert Job.objects.get(pk=job.pk).state == State.CANCELLED
