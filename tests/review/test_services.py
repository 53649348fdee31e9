"""Reviewer decisions against real PostgreSQL: edits, approval, rejection,
stale decisions and races with cancel and with a second reviewer."""

import threading

import pytest
from django.db import connections

from accounts.models import Membership
from catalog.models import CatalogItem, CatalogRevision
from accounts.services import membership_add
from catalog.services import revision_publish
from jobs.models import Job, State
from jobs.services import (
    InvalidTransition,
    LeaseLost,
    VersionConflict,
    job_accept_output,
    job_cancel,
    job_claim_next,
    job_retry,
)
from review.models import ReviewDecision, ReviewDecisionAppendOnly, ReviewSnapshot
from review.selectors import NotAReviewer
from review.decisions import ApprovalBlocked, ReasonRequired, ReviewStale
from review.edits import EditRejected, ReviewEdits
from review.services import review_approve, review_reject, review_save_edits
from tests.review import KIND, SHEET, flagged_job, sheet_items

RACE_ROUNDS = 20
FIX_ALL = ReviewEdits(currency="EUR", unit="piece")


def approve(user, job, edits=FIX_ALL, version=None):
    return review_approve(
        user=user, job_id=job.pk, expected_version=job.version if version is None else version, edits=edits
    )


def published_items(job):
    return {i.sku: i for i in CatalogItem.objects.filter(revision__job=job)}


def test_approve_publishes_the_edited_items_as_one_revision(workspace, reviewer):
    job = flagged_job(workspace)
    result = approve(reviewer, job)
    revision = CatalogRevision.objects.get(job=job)
    assert result == {"revision_id": str(revision.public_id), "item_count": 3}
    assert revision.approved_by == reviewer
    items = published_items(job)
    assert {sku: (i.currency, i.unit) for sku, i in items.items()} == {
        "A-1": ("EUR", "pcs"),
        "A-2": ("EUR", "ea"),
        "A-3": ("EUR", "piece"),
    }
    job.refresh_from_db()
    assert job.state == State.COMPLETED
    assert all(item["flags"] == [] for item in job.output["items"])


def test_approve_makes_the_revision_the_suppliers_current_one(workspace, reviewer):
    job = flagged_job(workspace)
    approve(reviewer, job)
    revision = CatalogRevision.objects.get(job=job)
    assert revision.supplier.current_revision_id == revision.pk


def test_approval_is_recorded_with_field_level_changes(workspace, reviewer):
    job = flagged_job(workspace)
    approve(reviewer, job, ReviewEdits(currency="EUR", rows={2: {"unit": "kg"}}))
    decision = ReviewDecision.objects.get(job=job)
    assert (decision.decision, decision.reviewer, decision.reviewer_name, decision.version_seen) == (
        "approve",
        reviewer,
        "rey",
        job.version,
    )
    assert decision.changes["overrides"]["currency"] == {
        "value": "EUR",
        "scope": "missing",
        "rows": [0, 1, 2],
    }
    row = decision.changes["rows"][2]
    assert (row["index"], row["sku"]) == (2, "A-3")
    assert row["fields"] == {
        "unit": {"before": "u", "after": "kg"},
        "currency": {"before": None, "after": "EUR"},
    }


def test_approval_with_remaining_flags_is_blocked_and_writes_nothing(workspace, reviewer):
    job = flagged_job(workspace)
    with pytest.raises(ApprovalBlocked) as blocked:
        approve(reviewer, job, ReviewEdits(currency="EUR"))
    assert [(p["sku"], p["code"]) for p in blocked.value.problems] == [("A-3", "ambiguous_unit")]
    assert "A-3" in blocked.value.message
    after = Job.objects.get(pk=job.pk)
    assert (after.state, after.version) == (State.AWAITING_REVIEW, job.version)
    assert not CatalogRevision.objects.exists()
    assert not ReviewDecision.objects.exists()


def test_approval_without_edits_lists_every_problem(workspace, reviewer):
    job = flagged_job(workspace)
    with pytest.raises(ApprovalBlocked) as blocked:
        approve(reviewer, job, ReviewEdits())
    assert sorted((p["sku"], p["code"]) for p in blocked.value.problems) == [
        ("A-1", "missing_currency"),
        ("A-2", "missing_currency"),
        ("A-3", "ambiguous_unit"),
        ("A-3", "missing_currency"),
    ]


def test_a_price_that_is_not_a_positive_decimal_is_refused_and_publishes_nothing(workspace, reviewer):
    job = flagged_job(workspace)
    with pytest.raises(EditRejected) as rejected:
        approve(reviewer, job, ReviewEdits(currency="EUR", unit="piece", rows={0: {"unit_price": "twelve"}}))
    assert "'twelve' is not a positive decimal number" in rejected.value.message
    assert not CatalogRevision.objects.exists()


def test_a_duplicate_sku_introduced_by_an_edit_blocks_approval(workspace, reviewer):
    job = flagged_job(workspace)
    with pytest.raises(ApprovalBlocked) as blocked:
        approve(reviewer, job, ReviewEdits(currency="EUR", unit="piece", rows={1: {"sku": "A-1"}}))
    assert {p["code"] for p in blocked.value.problems} == {"duplicate_sku"}


def test_a_rows_own_currency_wins_over_the_sheet_wide_one(workspace, reviewer):
    job = flagged_job(workspace)
    approve(
        reviewer,
        job,
        ReviewEdits(currency="EUR", currency_scope="all", unit="piece", rows={1: {"currency": "usd"}}),
    )
    assert {sku: i.currency for sku, i in published_items(job).items()} == {
        "A-1": "EUR",
        "A-2": "USD",
        "A-3": "EUR",
    }


def test_sheet_wide_currency_for_missing_keeps_stated_currencies(workspace, reviewer):
    items = sheet_items()
    items[0]["currency"] = "GBP"
    job = flagged_job(workspace, items=items)
    approve(reviewer, job, ReviewEdits(currency="EUR", unit="piece"))
    assert {sku: i.currency for sku, i in published_items(job).items()} == {
        "A-1": "GBP",
        "A-2": "EUR",
        "A-3": "EUR",
    }


def test_sheet_wide_currency_for_all_replaces_stated_currencies(workspace, reviewer):
    items = sheet_items()
    items[0]["currency"] = "GBP"
    job = flagged_job(workspace, items=items)
    approve(reviewer, job, ReviewEdits(currency="EUR", currency_scope="all", unit="piece"))
    assert {i.currency for i in published_items(job).values()} == {"EUR"}


def test_sheet_wide_unit_fills_only_missing_or_ambiguous_units(workspace, reviewer):
    items = sheet_items("EUR")
    items[0]["unit"] = None
    job = flagged_job(workspace, items=items)
    approve(reviewer, job, ReviewEdits(unit="piece"))
    assert {sku: i.unit for sku, i in published_items(job).items()} == {
        "A-1": "piece",
        "A-2": "ea",
        "A-3": "piece",
    }


def test_left_out_item_is_not_published(workspace, reviewer):
    job = flagged_job(workspace)
    approve(reviewer, job, ReviewEdits(currency="EUR", remove=frozenset({2})))
    assert set(published_items(job)) == {"A-1", "A-2"}
    assert ReviewDecision.objects.get(job=job).changes["removed"][0]["sku"] == "A-3"


def test_an_extractor_doubt_does_not_block_approval_and_is_recorded_as_answered(workspace, reviewer):
    items = sheet_items("EUR")
    items[2]["unit"] = "pcs"
    items[1]["flags"] = [{"code": "ambiguous_pack", "field": "pack_size", "message": "pack of 10?"}]
    job = flagged_job(workspace, items=items)
    approve(reviewer, job, ReviewEdits())
    assert CatalogRevision.objects.filter(job=job).exists()
    answered = ReviewDecision.objects.get(job=job).changes["answered_doubts"]
    assert [(a["index"], a["code"]) for a in answered] == [(1, "ambiguous_pack")]


def test_a_pack_size_that_is_not_a_number_is_refused(workspace, reviewer):
    job = flagged_job(workspace)
    with pytest.raises(EditRejected) as rejected:
        review_save_edits(
            user=reviewer,
            job_id=job.pk,
            expected_version=job.version,
            edits=ReviewEdits(rows={0: {"pack_size": "ten"}}),
        )
    assert "ten" in rejected.value.message
    assert Job.objects.get(pk=job.pk).version == job.version


def test_a_sheet_wide_currency_that_is_not_iso_is_refused(workspace, reviewer):
    job = flagged_job(workspace)
    with pytest.raises(EditRejected):
        approve(reviewer, job, ReviewEdits(currency="EURO", unit="piece"))
    assert not CatalogRevision.objects.exists()


def test_save_edits_bumps_the_version_and_revalidates(workspace, reviewer):
    job = flagged_job(workspace)
    version = review_save_edits(
        user=reviewer,
        job_id=job.pk,
        expected_version=job.version,
        edits=ReviewEdits(currency="EUR", rows={0: {"pack_size": "10"}}),
    )
    job.refresh_from_db()
    assert version == job.version
    assert job.state == State.AWAITING_REVIEW
    assert [[f["code"] for f in i["flags"]] for i in job.output["items"]] == [[], [], ["ambiguous_unit"]]
    assert job.output["items"][0]["pack_size"] == 10


def test_save_edits_records_before_and_after(workspace, reviewer):
    job = flagged_job(workspace)
    review_save_edits(
        user=reviewer,
        job_id=job.pk,
        expected_version=job.version,
        edits=ReviewEdits(rows={2: {"unit": "kg", "sku": "A-3"}}),
    )
    decision = ReviewDecision.objects.get(job=job)
    assert decision.decision == "edit"
    assert decision.changes["rows"] == [
        {
            "index": 2,
            "sku": "A-3",
            "source": {"sheet": "Prices", "row": 6},
            "fields": {"unit": {"before": "u", "after": "kg"}},
        }
    ]


def test_saving_nothing_changes_nothing(workspace, reviewer):
    job = flagged_job(workspace)
    version = review_save_edits(
        user=reviewer,
        job_id=job.pk,
        expected_version=job.version,
        edits=ReviewEdits(rows={0: {"sku": "A-1", "unit": "pcs"}}),
    )
    assert version == job.version == Job.objects.get(pk=job.pk).version
    assert not ReviewDecision.objects.exists()


def test_approve_after_saved_edits_uses_the_saved_items(workspace, reviewer):
    job = flagged_job(workspace)
    version = review_save_edits(
        user=reviewer, job_id=job.pk, expected_version=job.version, edits=ReviewEdits(currency="CHF")
    )
    review_approve(
        user=reviewer, job_id=job.pk, expected_version=version, edits=ReviewEdits(rows={2: {"unit": "piece"}})
    )
    assert {i.currency for i in published_items(job).values()} == {"CHF"}


def test_reject_requires_a_reason(workspace, reviewer):
    job = flagged_job(workspace)
    with pytest.raises(ReasonRequired):
        review_reject(user=reviewer, job_id=job.pk, expected_version=job.version, reason="  ")
    assert Job.objects.get(pk=job.pk).state == State.AWAITING_REVIEW


def test_reject_needs_attention_publishes_nothing_and_records_the_reason(workspace, reviewer):
    job = flagged_job(workspace)
    review_reject(user=reviewer, job_id=job.pk, expected_version=job.version, reason="wrong file")
    job.refresh_from_db()
    assert job.state == State.NEEDS_ATTENTION
    assert "wrong file" in job.reason
    assert not CatalogRevision.objects.exists()
    decision = ReviewDecision.objects.get(job=job)
    assert (decision.decision, decision.reason) == ("reject", "wrong file")


def test_stale_approval_after_cancel_publishes_nothing(workspace, reviewer):
    job = flagged_job(workspace)
    job_cancel(job_id=job.pk, by_label="staff")
    with pytest.raises(ReviewStale) as stale:
        approve(reviewer, job)
    assert "cancelled by staff" in stale.value.message
    assert stale.value.state == State.CANCELLED
    assert not CatalogRevision.objects.exists()
    assert not ReviewDecision.objects.exists()


def test_stale_approval_after_retry_publishes_nothing(workspace, reviewer):
    job = flagged_job(workspace)
    job_cancel(job_id=job.pk)
    job_retry(job_id=job.pk, by_label="staff")
    claim = job_claim_next(worker_id="w2", kinds=[KIND])
    job_accept_output(claim=claim, output=Job.objects.get(pk=job.pk).output, needs_review=True)
    assert Job.objects.get(pk=job.pk).state == State.AWAITING_REVIEW
    with pytest.raises(ReviewStale) as stale:
        approve(reviewer, job)
    assert "extracted again" in stale.value.message
    assert not CatalogRevision.objects.exists()


def test_stale_approval_after_another_reviewers_edit_publishes_nothing(workspace, reviewer):
    other = membership_add(workspace=workspace, username="ria", role=Membership.Role.ADMIN).user
    job = flagged_job(workspace)
    review_save_edits(
        user=other, job_id=job.pk, expected_version=job.version, edits=ReviewEdits(currency="USD")
    )
    with pytest.raises(ReviewStale) as stale:
        approve(reviewer, job)
    assert "ria saved edits" in stale.value.message
    assert not CatalogRevision.objects.exists()


def test_stale_reject_after_cancel_changes_nothing(workspace, reviewer):
    job = flagged_job(workspace)
    job_cancel(job_id=job.pk)
    with pytest.raises(ReviewStale):
        review_reject(user=reviewer, job_id=job.pk, expected_version=job.version, reason="bad")
    assert Job.objects.get(pk=job.pk).state == State.CANCELLED
    assert not ReviewDecision.objects.exists()


def test_second_reviewer_sees_the_job_was_already_approved(workspace, reviewer):
    other = membership_add(workspace=workspace, username="ria", role=Membership.Role.ADMIN).user
    job = flagged_job(workspace)
    approve(reviewer, job)
    with pytest.raises(ReviewStale) as stale:
        approve(other, job)
    assert "approved by rey" in stale.value.message
    assert CatalogRevision.objects.count() == 1
    assert ReviewDecision.objects.count() == 1


def test_member_without_the_reviewer_role_cannot_approve(workspace, member):
    job = flagged_job(workspace)
    with pytest.raises(NotAReviewer):
        approve(member, job)
    assert not CatalogRevision.objects.exists()


def test_member_of_another_workspace_cannot_approve(workspace, outsider):
    job = flagged_job(workspace)
    with pytest.raises(Job.DoesNotExist):
        approve(outsider, job)
    with pytest.raises(Job.DoesNotExist):
        review_reject(user=outsider, job_id=job.pk, expected_version=job.version, reason="x")
    assert Job.objects.get(pk=job.pk).state == State.AWAITING_REVIEW


def test_decisions_are_append_only(workspace, reviewer):
    job = flagged_job(workspace)
    review_reject(user=reviewer, job_id=job.pk, expected_version=job.version, reason="wrong file")
    decision = ReviewDecision.objects.get(job=job)
    decision.reason = "something else"
    with pytest.raises(ReviewDecisionAppendOnly):
        decision.save()


def _race(*actions):
    """Run the actions in threads (each on its own connection) released
    together by a barrier; returns what each returned or raised."""
    barrier = threading.Barrier(len(actions))
    results = [None] * len(actions)

    def run(n, action):
        try:
            barrier.wait()
            results[n] = action()
        except Exception as exc:  # the loser's exception is the result under test
            results[n] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(n, a)) for n, a in enumerate(actions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def _one_winner(job_id):
    state = Job.objects.get(pk=job_id).state
    revisions = CatalogRevision.objects.filter(job_id=job_id).count()
    return (state == State.CANCELLED and revisions == 0) or (state == State.COMPLETED and revisions == 1)


@pytest.mark.django_db(transaction=True)
def test_worker_accept_racing_a_cancel_never_both_cancels_and_publishes(workspace):
    from tests.review import _claimed

    outcomes = []
    for _ in range(RACE_ROUNDS):
        claim = _claimed(workspace, None, SHEET)
        accept, cancel = _race(
            lambda claim=claim: job_accept_output(
                claim=claim,
                output={"items": sheet_items("EUR")[:2]},
                publish=lambda job: revision_publish(job=job),
            ),
            lambda claim=claim: job_cancel(job_id=claim.job_id, by_label="staff"),
        )
        assert isinstance(accept, (str, LeaseLost)), accept
        assert cancel is None or isinstance(cancel, InvalidTransition), cancel
        assert _one_winner(claim.job_id)
        outcomes.append(Job.objects.get(pk=claim.job_id).state)
    assert set(outcomes) <= {State.CANCELLED, State.COMPLETED}


@pytest.mark.django_db(transaction=True)
def test_approval_racing_a_cancel_never_both_cancels_and_publishes(workspace, reviewer):
    for _ in range(RACE_ROUNDS):
        job = flagged_job(workspace)
        approval, cancel = _race(
            lambda job=job: approve(reviewer, job),
            lambda job=job: job_cancel(job_id=job.pk, by_label="staff"),
        )
        assert isinstance(approval, (dict, ReviewStale)), approval
        assert cancel is None or isinstance(cancel, InvalidTransition), cancel
        assert _one_winner(job.pk)
        decisions = ReviewDecision.objects.filter(job=job).count()
        assert decisions == (1 if isinstance(approval, dict) else 0)


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_approving_at_once_publish_one_revision(workspace, reviewer):
    other = membership_add(workspace=workspace, username="ria", role=Membership.Role.ADMIN).user
    for _ in range(RACE_ROUNDS):
        job = flagged_job(workspace)
        first, second = _race(lambda job=job: approve(reviewer, job), lambda job=job: approve(other, job))
        results = [r for r in (first, second) if isinstance(r, dict)]
        stale = [r for r in (first, second) if isinstance(r, ReviewStale)]
        assert (len(results), len(stale)) == (1, 1), (first, second)
        winner = ReviewDecision.objects.get(job=job).reviewer_name
        assert f"approved by {winner}" in stale[0].message
        assert CatalogRevision.objects.filter(job=job).count() == 1


def test_version_conflict_is_what_the_guard_raises(workspace):
    """The console relies on the job core refusing a stale version."""
    from jobs.services import job_approve

    job = flagged_job(workspace)
    with pytest.raises(VersionConflict):
        job_approve(
            job_id=job.pk, expected_version=job.version - 1, output=job.output, publish=lambda locked: None
        )


def test_a_job_entering_review_has_its_grid_snapshot_built_by_the_accept(workspace):
    job = flagged_job(workspace)
    snapshot = ReviewSnapshot.objects.get(job=job)
    assert (snapshot.version, snapshot.total) == (job.version, 3)
    assert snapshot.chunks.count() == 1


def test_a_snapshot_of_many_pages_is_read_back_item_for_item_and_replaced_by_a_newer_version(workspace):
    import json

    from review.selectors import SNAPSHOT_CHUNK, review_item_page_json
    from review.snapshots import review_snapshot_store

    job = flagged_job(workspace)
    items = [
        {"sku": f"S-{n}", "description": f'a "quoted" \\ name\t{n}', "unit_price": "1.50"} for n in range(450)
    ]
    review_snapshot_store(job_id=job.pk, version=job.version + 1, items=items)
    snapshot = ReviewSnapshot.objects.get(job=job)
    assert (snapshot.version, snapshot.total) == (job.version + 1, 450)
    assert sorted(snapshot.chunks.values_list("number", flat=True)) == [0, 1, 2]
    page = json.loads(
        review_item_page_json(snapshot=snapshot, start=SNAPSHOT_CHUNK - 5, count=SNAPSHOT_CHUNK)
    )
    assert [i["index"] for i in page["items"]] == list(range(SNAPSHOT_CHUNK - 5, 2 * SNAPSHOT_CHUNK - 5))
    assert [i["description"] for i in page["items"]] == [
        items[n]["description"] for n in range(SNAPSHOT_CHUNK - 5, 2 * SNAPSHOT_CHUNK - 5)
    ]
    review_snapshot_store(job_id=job.pk, version=job.version + 2, items=items[:10])
    snapshot = ReviewSnapshot.objects.get(job=job)
    assert (snapshot.version, snapshot.total, snapshot.chunks.count()) == (job.version + 2, 10, 1)
