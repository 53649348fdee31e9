"""Reviewer pages: who may see and act, what the pages show, and what a
reviewer is told when a decision comes too late."""

import uuid
from datetime import timedelta

import pytest
from django.urls import reverse

from catalog.models import CatalogRevision, Membership
from catalog.services import membership_add
from jobs.models import Job, State
from jobs.services import job_cancel
from review.models import ReviewDecision
from tests.review import flagged_job, make_supplier


def detail_url(job_id):
    return reverse("review:detail", args=[job_id])


def post(client, name, job, **data):
    data.setdefault("version", job.version)
    return client.post(reverse(f"review:{name}", args=[job.pk]), data, follow=True)


def messages_of(response):
    return [str(m) for m in response.context["messages"]]


@pytest.fixture
def job(workspace):
    return flagged_job(workspace)


@pytest.fixture
def reviewer_client(client, reviewer):
    client.force_login(reviewer)
    return client


def test_anonymous_user_is_sent_to_sign_in(client, job):
    for url in (reverse("review:queue"), detail_url(job.pk)):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")


def test_anonymous_approval_is_sent_to_sign_in_and_publishes_nothing(client, job):
    response = client.post(reverse("review:approve", args=[job.pk]),
                           {"version": job.version, "currency_override": "EUR"})
    assert response.status_code == 302
    assert not CatalogRevision.objects.exists()


def test_member_without_reviewer_role_gets_403(client, member, job):
    client.force_login(member)
    assert client.get(reverse("review:queue")).status_code == 403
    assert client.get(detail_url(job.pk)).status_code == 403


def test_member_without_reviewer_role_cannot_act(client, member, job):
    client.force_login(member)
    for name, data in (("approve", {"currency_override": "EUR", "unit_override": "piece"}),
                       ("reject", {"reason": "no"}), ("save", {"currency_override": "EUR"})):
        response = client.post(reverse(f"review:{name}", args=[job.pk]), {"version": job.version, **data})
        assert response.status_code == 403
    after = Job.objects.get(pk=job.pk)
    assert (after.state, after.version) == (State.AWAITING_REVIEW, job.version)
    assert not CatalogRevision.objects.exists()


def test_member_of_another_workspace_gets_the_same_404_as_an_unknown_id(client, outsider, job):
    client.force_login(outsider)
    theirs = client.get(detail_url(job.pk))
    unknown = client.get(detail_url(uuid.uuid4()))
    assert theirs.status_code == unknown.status_code == 404
    assert theirs.content == unknown.content


def test_member_of_another_workspace_cannot_act(client, outsider, job):
    client.force_login(outsider)
    for name, data in (("approve", {"currency_override": "EUR", "unit_override": "piece"}),
                       ("reject", {"reason": "no"}), ("save", {"currency_override": "EUR"})):
        response = client.post(reverse(f"review:{name}", args=[job.pk]), {"version": job.version, **data})
        assert response.status_code == 404
    assert Job.objects.get(pk=job.pk).state == State.AWAITING_REVIEW
    assert not CatalogRevision.objects.exists()


def test_queue_lists_waiting_jobs_oldest_first_with_flag_counts(reviewer_client, workspace):
    newer = flagged_job(workspace, supplier=make_supplier(workspace, "Newer Ltd"))
    older = flagged_job(workspace, supplier=make_supplier(workspace, "Older Ltd"))
    Job.objects.filter(pk=older.pk).update(created_at=newer.created_at - timedelta(hours=2))
    response = reviewer_client.get(reverse("review:queue"))
    rows = [(job.pk, source["supplier"], source["file"], job.flag_count, job.flagged_items)
            for job, source in response.context["rows"]]
    assert rows == [(older.pk, "Older Ltd", "acme-prices.csv", 4, 3),
                    (newer.pk, "Newer Ltd", "acme-prices.csv", 4, 3)]
    assert "4 flags" in response.content.decode()


def test_queue_leaves_out_other_workspaces_and_finished_jobs(reviewer_client, workspace, other_workspace):
    mine = flagged_job(workspace)
    flagged_job(other_workspace)
    cancelled = flagged_job(workspace)
    job_cancel(job_id=cancelled.pk)
    response = reviewer_client.get(reverse("review:queue"))
    assert [job.pk for job, _ in response.context["rows"]] == [mine.pk]


def test_detail_marks_flagged_cells_with_their_reason(reviewer_client, job):
    html = reviewer_client.get(detail_url(job.pk)).content.decode()
    assert html.count('class="field field-currency cell-flagged"') == 3
    assert html.count('class="field field-unit cell-flagged"') == 1
    assert "does not say what is counted" in html
    assert "No currency was found" in html


def test_detail_shows_the_source_rows_with_the_cited_rows_highlighted(reviewer_client, job):
    response = reviewer_client.get(detail_url(job.pk))
    sheet = response.context["page"].sheets[0]
    assert [(r.number, r.cited) for r in sheet.rows] == [
        (1, False), (2, False), (3, False), (4, True), (5, True), (6, True)]
    html = response.content.decode()
    assert 'id="src-0-6" class="row-cited row-cited-flagged"' in html
    assert 'data-source="src-0-6"' in html
    assert "Hex bolt M8" in html


def test_detail_carries_the_version_state_and_attempt(reviewer_client, job):
    html = reviewer_client.get(detail_url(job.pk)).content.decode()
    assert f'name="version" value="{job.version}"' in html
    assert 'id="job-state">Awaiting Review<' in html
    assert f'id="job-attempt">{job.attempt}<' in html


def test_currency_choices_offer_seen_codes_first(reviewer_client, workspace):
    from tests.review import sheet_items

    items = sheet_items()
    items[0]["currency"] = "SEK"
    job = flagged_job(workspace, items=items)
    currencies = reviewer_client.get(detail_url(job.pk)).context["page"].currencies
    assert currencies[0] == "SEK"
    assert {"EUR", "USD", "GBP"} <= set(currencies)


def test_approving_with_overrides_publishes_and_says_so(reviewer_client, job):
    response = post(reviewer_client, "approve", job, currency_override="EUR",
                    currency_scope="missing", unit_override="piece")
    revision = CatalogRevision.objects.get(job=job)
    assert any(f"revision {revision.pk} published with 3 items" in m for m in messages_of(response))
    assert Job.objects.get(pk=job.pk).state == State.COMPLETED
    assert response.context["awaiting"] is False
    assert reverse("catalog:revision", args=[revision.pk]) in response.content.decode()


def test_approving_with_a_row_edit_publishes_the_edit(reviewer_client, job):
    post(reviewer_client, "approve", job, currency_override="EUR",
         **{"item-2-unit": "kg", "item-0-description": "Hex bolt M8 zinc"})
    items = {i.sku: i for i in CatalogRevision.objects.get(job=job).items.all()}
    assert items["A-3"].unit == "kg"
    assert items["A-1"].description == "Hex bolt M8 zinc"


def test_unchanged_inputs_posted_back_are_not_edits(reviewer_client, job):
    response = post(reviewer_client, "save", job,
                    **{"item-0-sku": "A-1", "item-0-unit": "pcs", "item-2-currency": ""})
    assert "There were no edits to save." in messages_of(response)
    assert not ReviewDecision.objects.exists()


def test_blocked_approval_keeps_the_edits_and_lists_what_blocks(reviewer_client, job):
    response = post(reviewer_client, "approve", job, currency_override="EUR")
    messages = messages_of(response)
    assert any("1 problem(s) still block approval" in m and "A-3" in m for m in messages)
    after = Job.objects.get(pk=job.pk)
    assert after.state == State.AWAITING_REVIEW
    assert {i["currency"] for i in after.output["items"]} == {"EUR"}
    assert not CatalogRevision.objects.exists()


def test_stale_approval_after_cancel_tells_the_reviewer_and_publishes_nothing(reviewer_client, job):
    job_cancel(job_id=job.pk, by_label="ops@acme")
    response = post(reviewer_client, "approve", job, currency_override="EUR", unit_override="piece")
    messages = messages_of(response)
    assert any("Nothing was changed" in m and "cancelled by ops@acme" in m for m in messages)
    assert not CatalogRevision.objects.exists()


def test_second_reviewer_is_told_the_job_was_already_approved(client, reviewer, workspace, job):
    other = membership_add(workspace=workspace, username="ria", role=Membership.Role.REVIEWER).user
    client.force_login(reviewer)
    post(client, "approve", job, currency_override="EUR", unit_override="piece")
    client.force_login(other)
    response = post(client, "approve", job, currency_override="USD", unit_override="kg")
    assert any("approved by rey" in m for m in messages_of(response))
    assert CatalogRevision.objects.count() == 1
    assert {i.currency for i in CatalogRevision.objects.get().items.all()} == {"EUR"}


def test_reject_without_reason_changes_nothing(reviewer_client, job):
    response = post(reviewer_client, "reject", job, reason="")
    assert any("Say why" in m for m in messages_of(response))
    assert Job.objects.get(pk=job.pk).state == State.AWAITING_REVIEW


def test_reject_with_reason_needs_attention(reviewer_client, job):
    response = post(reviewer_client, "reject", job, reason="prices are last year's")
    assert Job.objects.get(pk=job.pk).state == State.NEEDS_ATTENTION
    assert "rejected by rey" in response.content.decode()


def test_a_post_without_version_is_refused(reviewer_client, job):
    response = reviewer_client.post(reverse("review:approve", args=[job.pk]),
                                    {"currency_override": "EUR", "unit_override": "piece"})
    assert response.status_code == 400
    assert not CatalogRevision.objects.exists()


def test_decision_history_is_shown(reviewer_client, job):
    post(reviewer_client, "save", job, currency_override="EUR")
    html = reviewer_client.get(detail_url(job.pk)).content.decode()
    assert "currency set to <strong>EUR</strong> on 3 items" in html


def test_a_long_source_sheet_shows_only_the_cited_rows_with_context(reviewer_client, workspace,
                                                                     monkeypatch):
    from tests.review import SHEET, sheet_items

    rows = SHEET["sheets"][0]["rows"] + [[f"X-{n}", "filler", "pcs", "1.00"] for n in range(20)]
    table = {"sheets": [{"name": "Prices", "rows": rows}]}
    items = sheet_items()[:1]
    monkeypatch.setattr("review.selectors.SOURCE_FULL_ROWS", 10)
    job = flagged_job(workspace, items=items, table=table)
    sheet = reviewer_client.get(detail_url(job.pk)).context["page"].sheets[0]
    assert [r.number for r in sheet.rows] == [2, 3, 4, 5, 6]
    assert (sheet.abridged, sheet.total_rows) == (True, 26)
