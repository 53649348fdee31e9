"""Expected refusals are logged in one line, and paging is exact: a page
past the end is a 404 problem, never an empty page with a link further out."""

import logging

import pytest
from django.test import Client

from accounts.services import apitoken_create
from jobs.services import job_admit


@pytest.fixture
def api_client(member):
    return Client(HTTP_AUTHORIZATION=f"Bearer {apitoken_create(user=member)[1]}")


def admit(workspace, count: int) -> None:
    for n in range(count):
        job_admit(workspace_id=workspace.pk, kind="noop", payload={}, idempotency_key=f"k{n}")


def request_records(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "django.request"]


def test_a_403_is_logged_in_one_line_without_a_traceback(client, member, caplog):
    client.force_login(member)  # a member without the reviewer role
    with caplog.at_level(logging.WARNING, logger="django.request"):
        assert client.get("/review/").status_code == 403

    [record] = request_records(caplog)
    assert record.getMessage().startswith("Forbidden")
    assert record.exc_info is None and not record.exc_text


def test_a_404_is_logged_in_one_line_without_a_traceback(client, member, caplog):
    client.force_login(member)
    with caplog.at_level(logging.WARNING, logger="django.request"):
        assert client.get("/catalog/revisions/999999/").status_code == 404

    assert all(r.exc_info is None for r in request_records(caplog))
    assert "Traceback" not in caplog.text


def test_a_server_error_keeps_its_traceback():
    from config.log_filters import ExpectedClientErrors

    try:
        raise RuntimeError("boom")
    except RuntimeError:
        import sys

        record = logging.LogRecord(
            "django.request", logging.ERROR, __file__, 1, "Internal Server Error", (), sys.exc_info()
        )
    record.status_code = 500
    assert ExpectedClientErrors().filter(record) and record.exc_info is not None


def test_a_page_past_the_end_is_a_404_problem(api_client, workspace):
    admit(workspace, 3)

    response = api_client.get("/api/jobs?page=3&page_size=2")

    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["type"] == "/problems/page-out-of-range"
    assert body["last_page"] == 2
    assert "Page 3 is past the last page (2; 3 in all)" in body["detail"]


def test_the_last_page_links_back_and_not_forward(api_client, workspace):
    admit(workspace, 3)

    body = api_client.get("/api/jobs?page=2&page_size=2").json()

    assert len(body["results"]) == 1 and body["count"] == 3
    assert body["next"] is None
    assert body["previous"] == "/api/jobs?page=1&page_size=2"


def test_page_one_of_nothing_is_an_empty_page(api_client, workspace):
    body = api_client.get("/api/jobs").json()
    assert (body["results"], body["count"], body["next"], body["previous"]) == ([], 0, None, None)
