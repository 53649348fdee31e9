"""Failures caused by the input are told in plain words; anything else is
an internal error with a reference, its detail kept for staff; numbers out
of range answer 400 or a form error, never 500."""

import re
from pathlib import Path

import pytest
from django.test import Client

from catalog.models import CatalogItem, CatalogRevision
from accounts.services import apitoken_create
from catalog.storage import sheets_storage
from catalog.extraction import MAX_PRICE
from catalog.validation import MAX_PACK_SIZE, MAX_TEXT
from jobs.models import Attempt, State
from jobs.worker import Worker
from tests.catalog.test_parse_sheet import CLEAN_CSV, admit_sheet
from tests.review import flagged_job

HUGE = "9" * 40


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.mark.parametrize("path", ["/jobs/", "/jobs/rows"])
def test_a_huge_page_number_on_the_jobs_pages_is_a_400(client, member, path):
    client.force_login(member)
    assert client.get(path, {"page": HUGE}).status_code == 400
    assert client.get(path, {"page": "2"}).status_code == 200


def test_a_huge_page_number_on_the_api_is_a_400_problem(member):
    api = Client(HTTP_AUTHORIZATION=f"Bearer {apitoken_create(user=member)[1]}")
    for name in ("page", "page_size"):
        response = api.get("/api/jobs", {name: HUGE})
        assert response.status_code == 400, name
        assert response["Content-Type"] == "application/problem+json"


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("unit_price", "1" * 30, "Price '111"),
        ("pack_size", "1" * 30, "Pack size"),
        ("sku", "S" * 300, "at most 200"),
    ],
)
def test_approving_an_oversized_value_is_refused_not_a_500(client, reviewer, workspace, field, value, words):
    job = flagged_job(workspace)
    response = client.post(
        f"/api/jobs/{job.pk}/approve",
        {
            "version": job.version,
            "set": {"currency": "EUR"},
            "items": [{"index": 2, "set": {"unit": "piece", field: value}}],
        },
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {apitoken_create(user=reviewer)[1]}",
    )
    assert response.status_code == 422, response.content
    assert words in str(response.json()), response.json()
    assert not CatalogRevision.objects.exists()


def test_validation_limits_match_the_catalog_columns():
    field = CatalogItem._meta.get_field
    assert 10 ** (field("unit_price").max_digits - field("unit_price").decimal_places) == MAX_PRICE
    assert 10 ** (field("pack_size").max_digits - field("pack_size").decimal_places) == MAX_PACK_SIZE
    assert {"sku": field("sku").max_length, "unit": field("unit").max_length} == MAX_TEXT


def test_a_sheet_with_an_oversized_price_goes_to_review_not_to_a_retry(workspace):
    job = admit_sheet(
        workspace, "big.csv", b"SKU,Description,Unit,Price,Currency\nA-1,Apples,kg,1234567890123456,EUR\n"
    )
    Worker(worker_id="w").run_one()
    job.refresh_from_db()
    assert (job.state, job.attempt) == (State.AWAITING_REVIEW, 1)
    codes = [f["code"] for f in job.output["items"][0]["flags"]]
    # The price is refused; the column model's doubt about a one-row sheet's
    # columns is shown beside it (the file goes to a reviewer anyway).
    assert codes.count("invalid_price") == 1
    assert set(codes) <= {"invalid_price", "uncertain_column"}


def test_an_unexpected_failure_shows_members_a_reference_and_staff_the_detail(workspace, media):
    job = admit_sheet(workspace, "fruit.csv", CLEAN_CSV)
    from catalog.models import PriceSheet

    path = Path(sheets_storage().path(PriceSheet.objects.get(pk=job.payload["sheet_id"]).storage_path))
    path.unlink()  # the stored file went missing: not the uploader's doing
    Worker(worker_id="w").run_one()
    job.refresh_from_db()
    assert job.state == State.RETRYING
    match = re.fullmatch(r"attempt 1 failed, retrying: internal error, reference ([0-9a-f]{8})", job.reason)
    assert match, job.reason
    assert str(media) not in job.reason
    error = Attempt.objects.get(job=job, number=1).error
    assert error.startswith(f"reference {match.group(1)}: FileNotFoundError")
    assert str(path) in error


def test_the_job_page_shows_members_the_reference_and_staff_the_detail(workspace, member, media):
    job = admit_sheet(workspace, "fruit.csv", CLEAN_CSV)
    from catalog.models import PriceSheet

    Path(sheets_storage().path(PriceSheet.objects.get(pk=job.payload["sheet_id"]).storage_path)).unlink()
    Worker(worker_id="w").run_one()
    reference = Attempt.objects.get(job=job, number=1).error.split(":", 1)[0]
    client = Client()
    client.force_login(member)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert f"internal error, {reference}" in page
    assert "FileNotFoundError" not in page and str(media) not in page
    member.is_staff = True
    member.save()
    assert "FileNotFoundError" in client.get(f"/jobs/{job.pk}/").content.decode()
