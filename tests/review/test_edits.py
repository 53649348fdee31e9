"""A reviewer's own values: provenance, validation for what they are, never
flagged as unsupported by the source row; omit and restore; bulk fixes."""

import pytest

from catalog.models import CatalogItem
from jobs.models import Job
from review.models import ReviewDecision
from review.decisions import ApprovalBlocked
from review.edits import EditRejected, Replace, ReviewEdits, SheetSet, value_check
from review.services import (
    review_approve,
    review_preview,
    review_save_edits,
)
from tests.review import flagged_job, sheet_items

EUR_PIECE = dict(currency="EUR", unit="piece")


def save(user, job, edits):
    return review_save_edits(user=user, job_id=job.pk, expected_version=job.version, edits=edits)


def items_of(job):
    return Job.objects.get(pk=job.pk).output["items"]


def test_a_corrected_description_and_price_publish_without_a_source_flag(workspace, reviewer):
    job = flagged_job(workspace)
    result = review_approve(
        user=reviewer,
        job_id=job.pk,
        expected_version=job.version,
        edits=ReviewEdits(
            **EUR_PIECE, rows={0: {"description": "Hexagon bolt M8", "unit_price": "13.10", "sku": "HB-8"}}
        ),
    )
    assert result["item_count"] == 3
    item = CatalogItem.objects.get(revision__job=job, sku="HB-8")
    assert (item.description, str(item.unit_price.normalize())) == ("Hexagon bolt M8", "13.1")


def test_a_value_the_reviewer_set_carries_who_when_and_the_extracted_value(workspace, reviewer):
    job = flagged_job(workspace)
    save(reviewer, job, ReviewEdits(rows={0: {"unit_price": "13.10"}}))
    item = items_of(job)[0]
    assert item["unit_price"] == "13.10"
    provenance = item["provenance"]["unit_price"]
    assert (provenance["by"], provenance["extracted"]) == ("rey", "12.50")
    assert provenance["at"]
    assert not [f for f in item["flags"] if f["code"] == "unsupported_source"]


def test_setting_the_extracted_value_back_drops_the_provenance(workspace, reviewer):
    job = flagged_job(workspace)
    version = save(reviewer, job, ReviewEdits(rows={0: {"unit_price": "13.10"}}))
    review_save_edits(
        user=reviewer,
        job_id=job.pk,
        expected_version=version,
        edits=ReviewEdits(rows={0: {"unit_price": "12.50"}}),
    )
    item = items_of(job)[0]
    assert "provenance" not in item
    assert item["unit_price"] == "12.50"


def test_the_decision_history_keeps_the_extracted_and_the_set_value(workspace, reviewer):
    job = flagged_job(workspace)
    save(reviewer, job, ReviewEdits(rows={0: {"description": "Hexagon bolt"}}))
    change = ReviewDecision.objects.get(job=job).changes["rows"][0]["fields"]["description"]
    assert change == {"before": "Hex bolt M8", "after": "Hexagon bolt"}


@pytest.mark.parametrize("code", ["EUT", "EURO", "HRK", "XXX", "12"])
def test_a_currency_that_is_not_an_active_iso_code_is_refused(workspace, reviewer, code):
    job = flagged_job(workspace)
    with pytest.raises(EditRejected) as rejected:
        save(reviewer, job, ReviewEdits(rows={1: {"currency": code}}))
    assert "not an active ISO 4217 currency code" in rejected.value.message
    assert Job.objects.get(pk=job.pk).version == job.version


def test_a_sheet_currency_that_is_not_active_is_refused(workspace, reviewer):
    job = flagged_job(workspace)
    with pytest.raises(EditRejected) as rejected:
        save(reviewer, job, ReviewEdits(sets=(SheetSet("currency", "EUT"),)))
    assert "The currency for the sheet: 'EUT'" in rejected.value.message


def test_a_currency_is_accepted_in_lower_case_and_stored_in_upper_case(workspace, reviewer):
    job = flagged_job(workspace)
    save(reviewer, job, ReviewEdits(rows={1: {"currency": " idr "}}))
    assert items_of(job)[1]["currency"] == "IDR"


def test_a_unit_that_is_not_a_unit_of_sale_is_refused(workspace, reviewer):
    job = flagged_job(workspace)
    with pytest.raises(EditRejected) as rejected:
        save(reviewer, job, ReviewEdits(rows={2: {"unit": "blorp"}}))
    assert "Item 3" in rejected.value.message and "blorp" in rejected.value.message


@pytest.mark.parametrize("price", ["0", "-1", "1.2.3", "abc", "1e3"])
def test_a_price_that_is_not_a_positive_decimal_is_refused(workspace, reviewer, price):
    job = flagged_job(workspace)
    with pytest.raises(EditRejected):
        save(reviewer, job, ReviewEdits(rows={0: {"unit_price": price}}))


def test_a_decimal_comma_price_is_stored_with_a_point_and_its_decimals(workspace, reviewer):
    job = flagged_job(workspace)
    save(reviewer, job, ReviewEdits(rows={0: {"unit_price": "1,10"}}))
    assert items_of(job)[0]["unit_price"] == "1.10"


def test_an_omitted_item_can_be_restored_before_approval(workspace, reviewer):
    job = flagged_job(workspace)
    version = save(reviewer, job, ReviewEdits(remove=frozenset({2})))
    assert items_of(job)[2]["omitted"] is True
    version = review_save_edits(
        user=reviewer, job_id=job.pk, expected_version=version, edits=ReviewEdits(restore=frozenset({2}))
    )
    assert "omitted" not in items_of(job)[2]
    review_approve(user=reviewer, job_id=job.pk, expected_version=version, edits=ReviewEdits(**EUR_PIECE))
    assert CatalogItem.objects.filter(revision__job=job).count() == 3


def test_an_omitted_item_does_not_block_and_is_not_published(workspace, reviewer):
    job = flagged_job(workspace, items=sheet_items("EUR"))
    review_approve(
        user=reviewer, job_id=job.pk, expected_version=job.version, edits=ReviewEdits(remove=frozenset({2}))
    )
    assert sorted(CatalogItem.objects.filter(revision__job=job).values_list("sku", flat=True)) == [
        "A-1",
        "A-2",
    ]


def test_a_unit_word_is_mapped_once_for_the_sheet(workspace, reviewer):
    job = flagged_job(workspace)
    save(reviewer, job, ReviewEdits(replace=(Replace("unit", "U", "pc", whole=True),)))
    assert [i["unit"] for i in items_of(job)] == ["pcs", "ea", "pc"]
    assert items_of(job)[2]["provenance"]["unit"]["extracted"] == "u"


def test_find_and_replace_within_a_column_changes_only_that_column(workspace, reviewer):
    job = flagged_job(workspace)
    save(reviewer, job, ReviewEdits(replace=(Replace("description", "M8", "M10"),)))
    assert [i["description"] for i in items_of(job)] == ["Hex bolt M10", "Washer M10", "Nut M10"]
    assert [i["sku"] for i in items_of(job)] == ["A-1", "A-2", "A-3"]


def test_a_currency_for_the_flagged_items_leaves_clean_items_alone(workspace, reviewer):
    items = sheet_items("GBP")
    items[2]["currency"] = None
    items[2]["unit"] = "pcs"
    job = flagged_job(workspace, items=items)
    save(reviewer, job, ReviewEdits(sets=(SheetSet("currency", "EUR", "flagged"),)))
    assert [i["currency"] for i in items_of(job)] == ["GBP", "GBP", "EUR"]


def test_the_summary_counts_what_approval_would_publish_omit_and_change(workspace, reviewer):
    job = flagged_job(workspace)
    summary = review_preview(
        user=reviewer,
        job_id=job.pk,
        expected_version=job.version,
        edits=ReviewEdits(currency="EUR", remove=frozenset({2}), rows={0: {"description": "Hexagon bolt"}}),
    )
    assert summary == {"publish": 2, "omitted": 1, "changed_by_hand": 2, "blocking": 0, "problems": []}
    assert Job.objects.get(pk=job.pk).version == job.version


def test_an_extracted_currency_that_is_not_active_blocks_approval(workspace, reviewer):
    job = flagged_job(workspace, items=sheet_items("EUT"))
    with pytest.raises(ApprovalBlocked) as blocked:
        review_approve(
            user=reviewer, job_id=job.pk, expected_version=job.version, edits=ReviewEdits(unit="piece")
        )
    assert {p["code"] for p in blocked.value.problems} == {"missing_currency"}


@pytest.mark.parametrize(
    "name, typed, kept",
    [
        ("currency", "usd", "USD"),
        ("currency", "", None),
        ("unit_price", "1,10", "1.10"),
        ("unit_price", "12.50", "12.50"),
        ("pack_size", "6", 6),
        ("unit", "pc", "pc"),
    ],
)
def test_a_cell_value_of_its_kind_is_kept_as_stored(name, typed, kept):
    assert value_check(name=name, value=typed, description="Hex bolt M8") == (kept, None)


@pytest.mark.parametrize(
    "name, typed, says",
    [
        ("currency", "dollar", "pick an ISO 4217 code"),
        ("currency", "EURO", "is not a currency"),
        ("currency", "US", "is not a currency"),
        ("unit_price", "on request", "is not a price"),
        ("unit_price", "0", "is not a price"),
        ("pack_size", "-2", "is not a pack size"),
        ("unit", "u", "'u'"),
    ],
)
def test_a_cell_value_not_of_its_kind_is_refused_with_the_reason(name, typed, says):
    kept, message = value_check(name=name, value=typed, description="Hex bolt M8")
    assert kept is None and says in message
