"""Reviewer pages: who may see and act, what the pages show, and what a
reviewer is told when a decision comes too late."""

import re
import uuid
from datetime import timedelta

import pytest
from django.urls import reverse

from catalog.models import CatalogRevision
from jobs.models import Job, State
from jobs.services import job_cancel
from tests.review import flagged_job, make_supplier, published_job, sheet_items


def detail_url(job_id):
    return reverse("review:detail", args=[job_id])


def post(client, name, job, **data):
    data.setdefault("version", job.version)
    return client.post(reverse(f"review:{name}", args=[job.pk]), data, follow=True)


def post_json(client, url, body):
    return client.post(url, body, content_type="application/json")


def without_csrf(response):
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", response.content.decode())


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


def test_member_without_reviewer_role_gets_403(client, member, job):
    client.force_login(member)
    assert client.get(reverse("review:queue")).status_code == 403
    assert client.get(detail_url(job.pk)).status_code == 403
    assert client.get(reverse("review:items", args=[job.pk])).status_code == 403


def test_member_without_reviewer_role_cannot_act(client, member, job):
    client.force_login(member)
    assert (
        client.post(
            reverse("review:reject", args=[job.pk]), {"version": job.version, "reason": "no"}
        ).status_code
        == 403
    )
    for name in ("save", "preview"):
        response = post_json(
            client,
            reverse(f"review:{name}", args=[job.pk]),
            {"version": job.version, "set": {"currency": "EUR"}},
        )
        assert response.status_code == 403
    after = Job.objects.get(pk=job.pk)
    assert (after.state, after.version) == (State.AWAITING_REVIEW, job.version)


def test_member_of_another_workspace_gets_the_same_404_as_an_unknown_id(client, outsider, job):
    client.force_login(outsider)
    theirs = client.get(detail_url(job.pk))
    unknown = client.get(detail_url(uuid.uuid4()))
    assert theirs.status_code == unknown.status_code == 404
    # Each render masks the CSRF token of the sign-out form anew; all else is equal.
    assert without_csrf(theirs) == without_csrf(unknown)
    assert client.get(reverse("review:items", args=[job.pk])).status_code == 404


def test_member_of_another_workspace_cannot_act(client, outsider, job):
    client.force_login(outsider)
    assert (
        client.post(
            reverse("review:reject", args=[job.pk]), {"version": job.version, "reason": "no"}
        ).status_code
        == 404
    )
    response = post_json(
        client, reverse("review:save", args=[job.pk]), {"version": job.version, "set": {"currency": "EUR"}}
    )
    assert response.status_code == 404
    assert Job.objects.get(pk=job.pk).state == State.AWAITING_REVIEW


def test_queue_lists_waiting_jobs_oldest_first_with_flag_counts(reviewer_client, workspace):
    newer = flagged_job(workspace, supplier=make_supplier(workspace, "Newer Ltd"))
    older = flagged_job(workspace, supplier=make_supplier(workspace, "Older Ltd"))
    Job.objects.filter(pk=older.pk).update(created_at=newer.created_at - timedelta(hours=2))
    response = reviewer_client.get(reverse("review:queue"))
    rows = [
        (job.pk, source["supplier"], source["file"], job.flag_count, job.flagged_items)
        for job, source in response.context["rows"]
    ]
    assert rows == [
        (older.pk, "Older Ltd", "acme-prices.csv", 4, 3),
        (newer.pk, "Newer Ltd", "acme-prices.csv", 4, 3),
    ]
    assert "4 flags" in response.content.decode()


def test_queue_leaves_out_other_workspaces_and_finished_jobs(reviewer_client, workspace, other_workspace):
    mine = flagged_job(workspace)
    flagged_job(other_workspace)
    cancelled = flagged_job(workspace)
    job_cancel(job_id=cancelled.pk)
    response = reviewer_client.get(reverse("review:queue"))
    assert [job.pk for job, _ in response.context["rows"]] == [mine.pk]


def test_detail_counts_flags_per_reason_with_a_link_to_the_first_item(reviewer_client, job):
    response = reviewer_client.get(detail_url(job.pk))
    reasons = {(r.code, r.count, r.first_index) for r in response.context["page"].reasons}
    assert reasons == {("missing_currency", 3, 0), ("ambiguous_unit", 1, 2)}
    html = response.content.decode()
    assert 'href="?item=2"' in html and "first: item 3" in html


def test_detail_page_carries_no_items_and_no_inline_script(reviewer_client, job):
    html = reviewer_client.get(detail_url(job.pk)).content.decode()
    assert "Hex bolt M8" not in html
    assert "<script>" not in html and " onclick=" not in html
    assert '<script id="grid-config" type="application/json">' in html


def test_detail_carries_the_version_state_and_attempt(reviewer_client, job):
    response = reviewer_client.get(detail_url(job.pk))
    html = response.content.decode()
    assert response.context["grid_config"]["version"] == job.version
    assert 'id="job-state">Awaiting Review<' in html
    assert f'id="job-attempt">{job.attempt}<' in html


def test_currency_picker_offers_every_active_code_with_its_name(reviewer_client, job):
    html = reviewer_client.get(detail_url(job.pk)).content.decode()
    for code, name in (("IDR", "Rupiah"), ("KZT", "Tenge"), ("ZAR", "Rand"), ("VND", "Dong")):
        assert f'<option value="{code}" label="{code} · {name}">' in html
    assert 'value="EUT"' not in html


def test_items_come_in_pages_with_flags_and_index(reviewer_client, job):
    data = reviewer_client.get(reverse("review:items", args=[job.pk]) + "?start=1&count=1").json()
    assert data["total"] == 3 and data["start"] == 1
    assert [(i["index"], i["sku"]) for i in data["items"]] == [(1, "A-2")]
    assert data["items"][0]["flags"][0]["code"] == "missing_currency"


def test_source_rows_come_around_the_cited_row(reviewer_client, job):
    data = reviewer_client.get(
        reverse("review:source", args=[job.pk]) + "?sheet=Prices&row=5&around=1"
    ).json()
    assert (data["first"], data["total"]) == (4, 6)
    assert [r[0] for r in data["rows"]] == ["A-1", "A-2", "A-3"]


def test_saving_json_edits_records_the_change(reviewer_client, job):
    response = post_json(
        reviewer_client,
        reverse("review:save", args=[job.pk]),
        {"version": job.version, "set": {"currency": "EUR"}},
    )
    answer = response.json()
    assert (answer["version"], answer["changed"]) == (job.version + 1, True)
    html = reviewer_client.get(detail_url(job.pk)).content.decode()
    assert "currency set to <strong>EUR</strong> on 3 items" in html


def test_preview_summarises_without_writing(reviewer_client, job):
    response = post_json(
        reviewer_client,
        reverse("review:preview", args=[job.pk]),
        {"version": job.version, "set": {"currency": "EUR"}, "items": [{"index": 2, "omit": True}]},
    )
    assert response.json()["publish"] == 2 and response.json()["omitted"] == 1
    assert Job.objects.get(pk=job.pk).version == job.version


def test_after_approving_the_reviewer_lands_on_the_next_job(reviewer_client, workspace, job):
    following = flagged_job(workspace)
    response = post_json(
        reviewer_client,
        f"/api/jobs/{job.pk}/approve",
        {
            "version": job.version,
            "set": {"currency": "EUR"},
            "items": [{"index": 2, "set": {"unit": "piece"}}],
        },
    )
    assert response.status_code == 200
    response = reviewer_client.get(reverse("review:next", args=[job.pk]))
    assert response["Location"] == detail_url(following.pk)


def test_after_the_last_job_the_reviewer_lands_on_the_queue(reviewer_client, job):
    response = reviewer_client.get(reverse("review:next", args=[job.pk]), follow=True)
    assert response.redirect_chain[-1][0] == reverse("review:queue")
    assert "Nothing else waits for review." in messages_of(response)


def test_reject_without_reason_changes_nothing(reviewer_client, job):
    response = post(reviewer_client, "reject", job, reason="")
    assert any("Say why" in m for m in messages_of(response))
    assert Job.objects.get(pk=job.pk).state == State.AWAITING_REVIEW


def test_reject_with_reason_needs_attention(reviewer_client, job):
    response = post(reviewer_client, "reject", job, reason="prices are last year's")
    assert Job.objects.get(pk=job.pk).state == State.NEEDS_ATTENTION
    assert "rejected by rey" in response.content.decode()


def test_a_reject_without_version_is_refused(reviewer_client, job):
    response = reviewer_client.post(reverse("review:reject", args=[job.pk]), {"reason": "x"})
    assert response.status_code == 400
    assert Job.objects.get(pk=job.pk).state == State.AWAITING_REVIEW


def test_saving_answers_what_the_grid_redraws_without_a_reload(reviewer_client, job):
    response = post_json(
        reviewer_client,
        reverse("review:save", args=[job.pk]),
        {"version": job.version, "set": {"currency": "EUR"}},
    )
    answer = response.json()
    # Only A-3's unit is left: one blocking flag on the third item.
    assert answer["flagged"] == [[2, 2]] and answer["total"] == 3
    assert 'id="blocking-count">1</strong>' in answer["summary_html"]
    assert "Unit unclear" in answer["summary_html"]


def test_the_grid_finds_the_items_of_one_flag_code_on_every_page(reviewer_client, job):
    url = reverse("review:matches", args=[job.pk])
    assert reviewer_client.get(url + "?flag=missing_currency").json()["ranges"] == [[0, 2]]
    assert reviewer_client.get(url + "?flag=ambiguous_unit&field=unit").json() == {
        "version": job.version,
        "count": 1,
        "ranges": [[2, 2]],
    }
    assert reviewer_client.get(url + "?field=sku").json()["count"] == 0


def test_the_summary_counts_blocking_and_advisory_flags_apart_by_name(reviewer_client, workspace):
    items = sheet_items("EUR")
    items[0]["flags"] = [{"code": "price_changed", "field": "unit_price", "message": "Up by 80%."}]
    job = flagged_job(workspace, items=items)
    page = reviewer_client.get(detail_url(job.pk)).context["page"]
    assert (page.blocking_count, page.advisory_count) == (1, 1)
    html = reviewer_client.get(detail_url(job.pk)).content.decode()
    assert "Price moved" in html and "(advisory)" in html


def test_a_cell_is_checked_as_it_is_committed(reviewer_client, job):
    url = reverse("review:check", args=[job.pk])
    assert reviewer_client.get(url, {"field": "currency", "value": "eur"}).json() == {
        "ok": True,
        "value": "EUR",
    }
    refused = reviewer_client.get(url, {"field": "unit", "value": "u", "description": "Nut M8"}).json()
    assert refused["ok"] is False and "'u'" in refused["message"]
    assert reviewer_client.get(url, {"field": "colour", "value": "red"}).status_code == 400


def test_the_approval_message_names_the_suppliers_revision_number(reviewer_client, workspace, job):
    other = make_supplier(workspace, "Other Supplier")
    published_job(workspace, items=sheet_items("EUR")[:1], supplier=other)  # takes an id first
    response = post_json(
        reviewer_client,
        f"/api/jobs/{job.pk}/approve",
        {
            "version": job.version,
            "set": {"currency": "EUR"},
            "items": [{"index": 2, "set": {"unit": "piece"}}],
        },
    )
    assert response.status_code == 200
    revision = CatalogRevision.objects.get(job=job)
    assert (revision.number, revision.pk != revision.number) == (1, True)
    response = reviewer_client.get(reverse("review:next", args=[job.pk]), follow=True)
    assert "Approved: revision 1 published with 3 items." in messages_of(response)
