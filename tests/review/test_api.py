"""Review over HTTP: POST /api/jobs/<id>/approve and /reject with the page's rules."""

import uuid

import pytest

from accounts.models import Membership
from catalog.models import CatalogItem, CatalogRevision
from accounts.services import apitoken_create, membership_add
from jobs.models import Job, State
from tests.review import flagged_job

PROBLEM = "application/problem+json"


@pytest.fixture
def job(workspace):
    return flagged_job(workspace)


def bearer(user):
    return {"HTTP_AUTHORIZATION": f"Bearer {apitoken_create(user=user)[1]}"}


def approve(client, job, body, user):
    return client.post(f"/api/jobs/{job.pk}/approve", body, content_type="application/json", **bearer(user))


def test_approve_with_edits_publishes_and_answers_the_revision(client, reviewer, job):
    response = approve(
        client,
        job,
        {
            "version": job.version,
            "set": {"currency": "EUR", "unit": None},
            "items": [
                {"index": 2, "set": {"unit": "piece", "description": "Nut M8 zinc", "unit_price": "1.10"}},
                {"index": 1, "omit": True},
            ],
        },
        reviewer,
    )
    assert response.status_code == 200, response.content
    revision = CatalogRevision.objects.get(job=job)
    assert response.json() == {"revision_id": str(revision.public_id), "item_count": 2}
    nut = CatalogItem.objects.get(revision=revision, sku="A-3")
    assert (nut.description, nut.unit, str(nut.unit_price.normalize()), nut.currency) == (
        "Nut M8 zinc",
        "piece",
        "1.1",
        "EUR",
    )
    assert CatalogItem.objects.get(revision=revision, sku="A-1").unit == "pcs"


def test_blocked_approval_is_422_with_the_remaining_flags_and_keeps_the_edits(client, reviewer, job):
    response = approve(client, job, {"version": job.version, "set": {"currency": "EUR"}}, reviewer)
    assert response.status_code == 422
    assert response["Content-Type"] == PROBLEM
    body = response.json()
    assert body["type"] == "/problems/approval-blocked"
    assert [(f["index"], f["code"]) for f in body["flags"]] == [(2, "ambiguous_unit")]
    after = Job.objects.get(pk=job.pk)
    assert body["version"] == after.version == job.version + 1
    assert {i["currency"] for i in after.output["items"]} == {"EUR"}
    assert not CatalogRevision.objects.exists()


def test_an_invalid_currency_is_refused_with_a_clear_message(client, reviewer, job):
    response = approve(
        client,
        job,
        {
            "version": job.version,
            "set": {"currency": "EUT"},
            "items": [{"index": 2, "set": {"unit": "piece"}}],
        },
        reviewer,
    )
    assert response.status_code == 422
    assert "'EUT' is not an active ISO 4217 currency code" in response.json()["detail"]
    assert Job.objects.get(pk=job.pk).version == job.version


def test_a_stale_version_is_409_and_publishes_nothing(client, reviewer, job):
    response = approve(client, job, {"version": job.version + 5, "set": {"currency": "EUR"}}, reviewer)
    assert response.status_code == 409
    assert response.json()["type"] == "/problems/version-conflict"
    assert not CatalogRevision.objects.exists()


def test_a_member_without_the_reviewer_role_gets_403(client, member, job):
    response = approve(client, job, {"version": job.version, "set": {"currency": "EUR"}}, member)
    assert response.status_code == 403
    assert response["Content-Type"] == PROBLEM


def test_another_workspace_gets_the_same_404_as_an_unknown_id(client, outsider, job):
    theirs = approve(client, job, {"version": job.version}, outsider)
    unknown = client.post(
        f"/api/jobs/{uuid.uuid4()}/approve",
        {"version": 1},
        content_type="application/json",
        **bearer(outsider),
    )
    assert theirs.status_code == unknown.status_code == 404
    assert theirs.content == unknown.content


def test_no_credentials_is_401(client, job):
    response = client.post(
        f"/api/jobs/{job.pk}/approve", {"version": job.version}, content_type="application/json"
    )
    assert response.status_code == 401


@pytest.mark.parametrize(
    "body, words",
    [
        ({}, "`version`"),
        ({"version": 1, "set": {"price": "1"}}, "not a field"),
        ({"version": 1, "items": [{"index": -1}]}, "index"),
        ({"version": 1, "items": [{"index": 0}, {"index": 0}]}, "twice"),
        ({"version": 1, "colour": "red"}, "Unknown field"),
    ],
)
def test_a_malformed_body_is_400_saying_what_to_send(client, reviewer, job, body, words):
    response = approve(client, job, body, reviewer)
    assert response.status_code == 400
    assert words in response.json()["detail"]


def test_an_index_outside_the_items_is_refused(client, reviewer, job):
    response = approve(client, job, {"version": job.version, "items": [{"index": 3, "omit": True}]}, reviewer)
    assert response.status_code == 422
    assert "Item 4 does not exist" in response.json()["detail"]


def test_reject_needs_attention_with_the_reason(client, reviewer, job):
    response = client.post(
        f"/api/jobs/{job.pk}/reject",
        {"version": job.version, "reason": "old prices"},
        content_type="application/json",
        **bearer(reviewer),
    )
    assert response.status_code == 200
    assert response.json()["state"] == State.NEEDS_ATTENTION
    assert Job.objects.get(pk=job.pk).reason == "rejected in review: old prices"


def test_reject_without_a_reason_is_400(client, reviewer, job):
    response = client.post(
        f"/api/jobs/{job.pk}/reject",
        {"version": job.version},
        content_type="application/json",
        **bearer(reviewer),
    )
    assert response.status_code == 400
    assert Job.objects.get(pk=job.pk).state == State.AWAITING_REVIEW


def test_second_reviewer_racing_gets_409(client, reviewer, workspace, job):
    other = membership_add(workspace=workspace, username="ria", role=Membership.Role.REVIEWER).user
    body = {
        "version": job.version,
        "set": {"currency": "EUR"},
        "items": [{"index": 2, "set": {"unit": "piece"}}],
    }
    assert approve(client, job, body, reviewer).status_code == 200
    response = approve(client, job, {**body, "set": {"currency": "USD"}}, other)
    assert response.status_code == 409
    assert "approved by rey" in response.json()["detail"]
    assert {i.currency for i in CatalogRevision.objects.get().items.all()} == {"EUR"}


def test_approve_omits_every_item_of_a_flag_code_by_filter(client, reviewer, job):
    """A-3's unit is the only "ambiguous_unit": omitting by that code leaves
    two items, and a currency set on the items of another code reaches them."""
    response = approve(
        client,
        job,
        {
            "version": job.version,
            "omit": {"flag": "ambiguous_unit"},
            "sets": [{"field": "currency", "value": "EUR", "where": {"flag": "missing_currency"}}],
        },
        reviewer,
    )
    assert response.status_code == 200, response.content
    revision = CatalogRevision.objects.get(job=job)
    assert sorted(CatalogItem.objects.filter(revision=revision).values_list("sku", flat=True)) == [
        "A-1",
        "A-2",
    ]


def test_a_filter_that_is_not_one_is_400(client, reviewer, job):
    response = approve(client, job, {"version": job.version, "omit": {"code": "x"}}, reviewer)
    assert response.status_code == 400
    assert "omit.code" in response.json()["detail"]


def test_a_filter_naming_an_unknown_flag_code_is_400(client, reviewer, job):
    response = approve(client, job, {"version": job.version, "omit": {"flag": "no_such_code"}}, reviewer)
    assert response.status_code == 400
    assert "'no_such_code', which is not a flag code" in response.json()["detail"]


def test_a_filter_flag_is_a_code_exactly_as_the_document_lists_it(client, reviewer, job):
    response = approve(client, job, {"version": job.version, "omit": {"flag": " ambiguous_unit"}}, reviewer)
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "`omit.flag`" in detail and "' ambiguous_unit', which is not a flag code" in detail


def test_a_sheet_value_with_where_null_reaches_every_item(client, reviewer, job):
    """The document allows `"where": null` (no filter), so the server reads it as no filter."""
    body = {
        "version": job.version,
        "omit": {"flag": "ambiguous_unit"},
        "sets": [{"field": "currency", "value": "EUR", "where": None}],
    }
    response = approve(client, job, body, reviewer)
    assert response.status_code == 200, response.content
    assert {i.currency for i in CatalogRevision.objects.get(job=job).items.all()} == {"EUR"}
