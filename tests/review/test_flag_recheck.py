"""What a save does to the flags (catalog.flags): validation's own come back
once, and the flags it cannot check stay until their field is set, blocking
approval when the registry says they block."""

import pytest

from catalog.models import CatalogItem
from jobs.models import Job, State
from review.decisions import ApprovalBlocked
from review.edits import ReviewEdits
from review.services import review_approve, review_save_edits
from tests.catalog.test_model_checks import obedient_model  # noqa: F401 (a fixture)
from tests.catalog.test_parse_sheet import admit_sheet, run_until_idle
from tests.review import flagged_job, sheet_items


def codes(item, field=None):
    return [f["code"] for f in item["flags"] if field is None or f["field"] == field]


def save(user, job, edits):
    return review_save_edits(user=user, job_id=job.pk, expected_version=job.version, edits=edits)


def test_a_too_large_flag_is_not_doubled_after_a_save(workspace, reviewer):
    items = sheet_items()
    items[0]["unit"] = "u" * 60  # past the catalog's 50 characters
    job = flagged_job(workspace, items=items)
    assert codes(job.output["items"][0], "unit").count("too_large") == 1
    save(reviewer, job, ReviewEdits(currency="EUR", currency_scope="all"))
    job = Job.objects.get(pk=job.pk)
    assert codes(job.output["items"][0], "unit").count("too_large") == 1
    save(reviewer, job, ReviewEdits(rows={1: {"unit": "piece"}}))
    job = Job.objects.get(pk=job.pk)
    assert codes(job.output["items"][0], "unit").count("too_large") == 1


@pytest.fixture
def unstated_currency_job(workspace, obedient_model):  # noqa: F811
    """A model job whose model gave USD, which the sheet states nowhere."""
    job = admit_sheet(workspace, "prices.csv", b"SKU,Name,Price\nA-1,Apples,1.50\nB-2,Pears,2.25\n")
    run_until_idle()
    job = Job.objects.get(pk=job.pk)
    assert job.state == State.AWAITING_REVIEW
    assert [codes(i, "currency") for i in job.output["items"]] == [["currency_not_in_sheet"]] * 2
    return job


def test_the_models_unstated_currency_survives_an_edit_of_another_field(unstated_currency_job, reviewer):
    job = unstated_currency_job
    save(reviewer, job, ReviewEdits(rows={0: {"description": "Green apples"}, 1: {"unit": "kg"}}))
    job = Job.objects.get(pk=job.pk)
    assert job.output["items"][0]["description"] == "Green apples"
    assert [codes(i, "currency") for i in job.output["items"]] == [["currency_not_in_sheet"]] * 2


def test_the_models_unstated_currency_blocks_approval(unstated_currency_job, reviewer):
    job = unstated_currency_job
    with pytest.raises(ApprovalBlocked) as blocked:
        review_approve(
            user=reviewer,
            job_id=job.pk,
            expected_version=job.version,
            edits=ReviewEdits(rows={0: {"description": "Green apples"}}),
        )
    assert [(p["index"], p["code"]) for p in blocked.value.problems] == [
        (0, "currency_not_in_sheet"),
        (1, "currency_not_in_sheet"),
    ]
    assert Job.objects.get(pk=job.pk).state == State.AWAITING_REVIEW
    assert not CatalogItem.objects.filter(revision__job=job).exists()


def test_the_reviewers_currency_clears_the_models_unstated_one(unstated_currency_job, reviewer):
    job = unstated_currency_job
    review_approve(
        user=reviewer,
        job_id=job.pk,
        expected_version=job.version,
        edits=ReviewEdits(currency="EUR", currency_scope="all"),
    )
    assert Job.objects.get(pk=job.pk).state == State.COMPLETED
    assert {i.currency for i in CatalogItem.objects.filter(revision__job=job)} == {"EUR"}


def test_the_reviewer_may_confirm_the_models_currency_by_setting_it(unstated_currency_job, reviewer):
    job = unstated_currency_job
    save(reviewer, job, ReviewEdits(currency="USD", currency_scope="missing"))
    job = Job.objects.get(pk=job.pk)
    assert [codes(i, "currency") for i in job.output["items"]] == [[], []]
    review_approve(user=reviewer, job_id=job.pk, expected_version=job.version, edits=ReviewEdits())
    assert {i.currency for i in CatalogItem.objects.filter(revision__job=job)} == {"USD"}


@pytest.fixture
def unread_description_job(workspace, settings):
    """A model job whose model named the first item by words its row does not hold."""
    from tests.catalog.test_model_checks import model_item
    from tests.fake_llm import FakeProvider

    fake = FakeProvider(
        default=lambda _body: {
            "items": [
                model_item("A-1", "Golden apples, premium", "1.50", "EUR", 2),
                model_item("B-2", "Pears", "2.25", "EUR", 3),
            ]
        }
    )
    settings.EXTRACTOR = "openai"
    settings.LLM_BASE_URL = fake.url
    settings.LLM_API_KEY = "test-key"
    settings.LLM_MODEL = "fake-model"
    settings.LLM_TIMEOUT_SECONDS = 5
    try:
        job = admit_sheet(workspace, "prices.csv", b"SKU,Name,Price EUR\nA-1,Apples,1.50\nB-2,Pears,2.25\n")
        run_until_idle()
    finally:
        fake.close()
    job = Job.objects.get(pk=job.pk)
    assert job.state == State.AWAITING_REVIEW
    assert codes(job.output["items"][0], "description") == ["description_not_in_row"]
    return job


def test_the_models_unread_description_survives_an_edit_of_another_field_and_blocks(
    unread_description_job, reviewer
):
    job = unread_description_job
    save(reviewer, job, ReviewEdits(rows={0: {"unit": "kg"}}))
    job = Job.objects.get(pk=job.pk)
    assert codes(job.output["items"][0], "description") == ["description_not_in_row"]
    with pytest.raises(ApprovalBlocked) as blocked:
        review_approve(user=reviewer, job_id=job.pk, expected_version=job.version, edits=ReviewEdits())
    assert [(p["index"], p["code"]) for p in blocked.value.problems] == [(0, "description_not_in_row")]


def test_the_reviewers_description_clears_the_models_unread_one(unread_description_job, reviewer):
    job = unread_description_job
    review_approve(
        user=reviewer,
        job_id=job.pk,
        expected_version=job.version,
        edits=ReviewEdits(rows={0: {"description": "Apples"}}),
    )
    assert Job.objects.get(pk=job.pk).state == State.COMPLETED
