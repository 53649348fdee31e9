"""Every HTTP input of the API is bounded, and a request past a bound gets a
400 (or 413, 415, 429) problem that says what is wrong, never a 500 and
never an answer the document does not state."""

import io
import json

import pytest
from django.test import Client

from accounts.models import ApiToken
from accounts.services import apitoken_create
from jobs.http import JSON_MAX_DEPTH
from jobs.models import Job, State
from tests.review import flagged_job

CSV = b"SKU,Description,Unit,Price,Currency\nA-1,Bolt M8,piece,0.42,EUR\n"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 32


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def bearer(user, scope=ApiToken.Scope.FULL):
    return Client(HTTP_AUTHORIZATION=f"Bearer {apitoken_create(user=user, scope=scope)[1]}")


def upload(client, content=CSV, *, key, name="prices.csv"):
    handle = io.BytesIO(content)
    handle.name = name
    return client.post("/api/jobs", {"file": handle}, HTTP_IDEMPOTENCY_KEY=key)


def post_json(client, path, body):
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return client.post(path, data, content_type="application/json")


@pytest.fixture
def job(workspace):
    return flagged_job(workspace)


def detail_of(response) -> str:
    assert response["Content-Type"] == "application/problem+json"
    return response.json()["detail"]


# --- JSON bodies ---------------------------------------------------------------------


def test_a_deeply_nested_body_is_a_400_naming_the_depth(reviewer, job):
    deep = "[" * 100_000 + "]" * 100_000
    response = post_json(bearer(reviewer), f"/api/jobs/{job.pk}/approve", deep)
    assert response.status_code == 400
    assert f"deeper than {JSON_MAX_DEPTH}" in detail_of(response)


def test_a_body_declared_larger_than_the_limit_is_a_413_before_it_is_read(reviewer, job, settings):
    settings.API_JSON_MAX_BYTES = 1000
    body = {"version": job.version, "reason": "x" * 2000}
    response = post_json(bearer(reviewer), f"/api/jobs/{job.pk}/reject", body)
    assert response.status_code == 413
    assert response.json()["type"] == "/problems/body-too-large"
    assert Job.objects.get(pk=job.pk).state == State.AWAITING_REVIEW


def test_a_body_that_is_not_json_is_a_400_saying_so(reviewer, job):
    response = post_json(bearer(reviewer), f"/api/jobs/{job.pk}/approve", "{version: 1")
    assert response.status_code == 400
    assert "not valid JSON" in detail_of(response)


# --- reviewer bodies -------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, where",
    [
        ({"sets": [{"field": {"name": "unit"}, "value": "pc"}]}, "sets[0].field"),
        ({"sets": [{"field": "colour", "value": "red"}]}, "sets[0].field"),
        ({"items": [{"index": 0, "set": {"description": "d" * 2001}}]}, "items[0].set.description"),
        ({"replace": [{"field": "unit", "find": "x" * 2001, "replace": "y"}]}, "replace[0].find"),
        ({"items": [{"index": 10_000_001}]}, "items[0].index"),
        ({"items": [{"index": 0, "omit": "yes"}]}, "items[0].omit"),
        ({"set": {"unit_price": True}}, "set.unit_price"),
    ],
)
def test_an_approve_body_past_a_bound_is_a_400_naming_the_field(reviewer, job, body, where):
    response = post_json(bearer(reviewer), f"/api/jobs/{job.pk}/approve", {"version": job.version, **body})
    assert response.status_code == 400
    assert f"`{where}`" in detail_of(response)
    assert Job.objects.get(pk=job.pk).version == job.version


@pytest.mark.parametrize("version", [1.5, "1", True, 2**31])
def test_a_version_that_is_not_a_whole_number_in_range_is_a_400(reviewer, job, version):
    response = post_json(
        bearer(reviewer), f"/api/jobs/{job.pk}/reject", {"version": version, "reason": "old"}
    )
    assert response.status_code == 400
    assert "`version`" in detail_of(response)


def test_a_version_written_as_a_whole_float_is_that_integer(reviewer, job):
    response = post_json(
        bearer(reviewer),
        f"/api/jobs/{job.pk}/reject",
        {"version": float(job.version), "reason": "old prices"},
    )
    assert response.status_code == 200


@pytest.mark.parametrize("reason", ["", "   "])
def test_an_empty_reason_is_a_400(reviewer, job, reason):
    response = post_json(
        bearer(reviewer), f"/api/jobs/{job.pk}/reject", {"version": job.version, "reason": reason}
    )
    assert response.status_code == 400
    assert "`reason`" in detail_of(response)


@pytest.mark.parametrize("currency", ["", "EURO"])
def test_a_mapping_currency_that_is_not_three_letters_is_a_400(reviewer, job, currency):
    body = {
        "version": job.version,
        "currency": currency,
        "sheets": [{"sheet": "Sheet1", "header_row": 1, "columns": {"unit_price": "D"}}],
    }
    response = post_json(bearer(reviewer), f"/api/jobs/{job.pk}/mapping", body)
    assert response.status_code == 400
    assert "`currency`" in detail_of(response)


# --- query parameters -------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/jobs", "/api/suppliers"])
@pytest.mark.parametrize("page", ["10001", "9" * 40])
def test_a_page_past_the_stated_maximum_is_a_400_not_a_500(member, path, page):
    response = bearer(member).get(path, {"page": page})
    assert response.status_code == 400
    assert "`page`" in detail_of(response)


def test_a_page_past_the_last_is_a_404_naming_the_last_page(member):
    response = bearer(member).get("/api/suppliers", {"page": "3"})
    assert response.status_code == 404
    assert response.json()["last_page"] == 1


# --- uploads -----------------------------------------------------------------------------


def test_a_png_upload_is_a_415_saying_what_the_file_is(member):
    response = upload(bearer(member), PNG, key="png", name="prices.png")
    assert response.status_code == 415
    assert "PNG image" in detail_of(response)
    assert not Job.objects.exists()


def test_uploads_past_the_workspace_rate_are_a_429_with_retry_after(member, outsider, settings):
    settings.UPLOAD_RATE_PER_MINUTE = 2
    client = bearer(member)
    assert [upload(client, key=f"k{n}").status_code for n in range(2)] == [202, 202]
    refused = upload(client, key="k2")
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert "UPLOAD_RATE_PER_MINUTE" in detail_of(refused)
    assert upload(client, key="k0").status_code == 202  # a replay is answered
    assert upload(bearer(outsider), key="k9").status_code == 202  # another workspace is not held up
    assert Job.objects.count() == 3


# --- methods ------------------------------------------------------------------------------


def test_an_unknown_method_is_a_405_problem_with_allow(member, workspace):
    job = flagged_job(workspace)
    response = bearer(member).delete(f"/api/jobs/{job.pk}")
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"
    assert response.json()["type"] == "/problems/method-not-allowed"


@pytest.mark.parametrize("method", ["delete", "put", "patch"])
def test_a_read_token_is_refused_as_such_on_any_change_even_an_unknown_method(member, workspace, method):
    job = flagged_job(workspace)
    response = getattr(bearer(member, ApiToken.Scope.READ), method)(f"/api/jobs/{job.pk}")
    assert response.status_code == 403
    assert response.json()["type"] == "/problems/read-only-token"


def test_the_apis_own_address_is_a_404_problem(member):
    response = bearer(member).get("/api/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"
