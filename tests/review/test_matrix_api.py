"""Price matrices over the API, end to end with a real worker cycle: a
matrix is proposed for review instead of refused, a reviewer maps it with
the matrix form, its cells become reviewed items citing their cells, and
the supplier's next matrix of the same shape publishes without review."""

import pytest

from catalog.models import CatalogRevision, SupplierLayout
from jobs.models import State
from review.services import review_approve
from tests.catalog import matrixgen
from tests.review.test_mapping_api import admit, bearer, post_mapping, run_until_idle


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def matrix_mapping(gen, **changes) -> dict:
    return {
        "sheets": [{"sheet": "Sheet1", "header_row": None, "matrix": {**gen.form, **changes}}],
        "currency": "EUR",
    }


def proposed_job(workspace, gen):
    job = admit(workspace, gen.data, name=gen.filename)
    run_until_idle()
    job.refresh_from_db()
    return job


def test_a_matrix_waits_for_review_with_its_proposed_matrix_in_the_status(workspace, reviewer):
    gen = matrixgen.width_by_height()
    job = proposed_job(workspace, gen)
    assert job.state == State.AWAITING_REVIEW
    status = bearer(reviewer).get(f"/api/jobs/{job.pk}").json()
    (sheet,) = status["columns"]
    assert sheet["kind"] == "matrix" and sheet["needs_confirmation"] is True
    assert sheet["matrix"] == {
        "row_labels": ["A"],
        "column_header_rows": [2],
        "body": "B3:F6",
        "dimension_unit": None,
        "product": None,
    }
    assert sheet["cells"] == {"priced": 19, "empty": 1, "no_price": 0, "unlabeled": 0}
    items = bearer(reviewer).get(f"/api/jobs/{job.pk}/items").json()["items"]
    assert items[0]["source"] == {"sheet": "Sheet1", "row": 3, "column": "B", "price_places": 2}


def test_a_matrix_mapped_over_the_api_becomes_reviewed_items_and_the_next_one_publishes(workspace, reviewer):
    gen = matrixgen.width_by_height()
    job = proposed_job(workspace, gen)
    assert post_mapping(bearer(reviewer), job, matrix_mapping(gen)).status_code == 202
    run_until_idle()
    job.refresh_from_db()
    assert job.state == State.AWAITING_REVIEW
    assert job.output["layout"]["source"] == "reviewer"
    got = {
        (i["source"]["row"], i["source"]["column"]): (i["description"], i["unit_price"])
        for i in job.output["items"]
    }
    assert got == gen.expected
    assert got[(3, "B")] == ("Roller blind, 60 × 100 cm", "60")
    assert all(i["currency"] == "EUR" and i["flags"] == [] for i in job.output["items"])
    assert any(
        "19 priced cells became items; 1 empty or not offered skipped" in n for n in job.output["notes"]
    )

    review_approve(user=reviewer, job_id=job.pk, expected_version=job.version)
    job.refresh_from_db()
    assert job.state == State.COMPLETED
    revision = CatalogRevision.objects.get(job=job)
    assert revision.items.count() == 19
    published = (
        bearer(reviewer).get(f"/api/revisions/{revision.public_id}/items?page_size=100").json()["results"]
    )
    assert {(i["source"]["row"], i["source"]["column"]): i["description"] for i in published} == {
        cell: description for cell, (description, _price) in gen.expected.items()
    }
    layout = SupplierLayout.objects.get()
    assert layout.mapping["sheets"][0]["matrix"]["body"] == "B3:F"

    # The supplier's next matrix: same sizes across, more rows, new prices.
    following = proposed_job(workspace, matrixgen.width_by_height(heights=(100, 120, 140, 160, 180), seed=3))
    assert following.state == State.COMPLETED
    assert following.output["layout"]["source"] == "remembered"
    revision = CatalogRevision.objects.get(job=following)
    assert revision.items.count() == 24 and revision.approved_by is None
    assert revision.items.filter(description="Roller blind, 140 × 180 cm").exists()


def test_a_matrix_of_another_shape_is_proposed_again_not_read_with_the_remembered_one(workspace, reviewer):
    gen = matrixgen.width_by_height()
    job = proposed_job(workspace, gen)
    post_mapping(bearer(reviewer), job, matrix_mapping(gen))
    run_until_idle()
    job.refresh_from_db()
    review_approve(user=reviewer, job_id=job.pk, expected_version=job.version)

    other = proposed_job(workspace, matrixgen.width_by_height(widths=(50, 70, 90)))
    assert other.state == State.AWAITING_REVIEW
    assert other.output["layout"]["source"] == "inferred"


def test_a_rate_card_stays_refused_until_a_reviewer_maps_it_as_a_matrix(workspace, reviewer):
    gen = matrixgen.rate_card()
    job = proposed_job(workspace, gen)
    assert job.state == State.NEEDS_ATTENTION and "rate card" in job.reason
    status = bearer(reviewer).get(f"/api/jobs/{job.pk}").json()
    assert status["columns"][0]["matrix"]["body"] == "B2:D4"
    assert post_mapping(bearer(reviewer), job, matrix_mapping(gen)).status_code == 202
    run_until_idle()
    job.refresh_from_db()
    assert job.state == State.AWAITING_REVIEW and len(job.output["items"]) == 9


@pytest.mark.parametrize(
    "change, message",
    [
        ({"body": "B3:Z6"}, "reaches outside the sheet"),
        ({"column_header_rows": [4]}, "column header row 4 is inside the body B3:F6"),
        ({"row_labels": ["B"]}, "row label column B is inside the body"),
        ({"body": "B3-F6"}, "is not a range"),
    ],
)
def test_an_impossible_matrix_is_a_422_that_says_why_and_changes_nothing(
    workspace, reviewer, change, message
):
    gen = matrixgen.width_by_height()
    job = proposed_job(workspace, gen)
    response = post_mapping(bearer(reviewer), job, matrix_mapping(gen, **change))
    assert response.status_code == 422
    assert response["Content-Type"].startswith("application/problem+json")
    assert any(message in e for e in response.json()["errors"]), response.json()["errors"]
    version = job.version
    job.refresh_from_db()
    assert job.version == version and job.state == State.AWAITING_REVIEW
