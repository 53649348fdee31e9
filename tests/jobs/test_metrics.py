"""/metrics: the dashboard's figures for Prometheus, behind a bearer token."""

import uuid
from datetime import timedelta

import pytest
from django.db.models.functions import Now
from prometheus_client.parser import text_string_to_metric_families

from jobs.models import Attempt, Job, OutboxMessage, State

TOKEN = "metrics-token-for-tests"


@pytest.fixture
def metrics_on(settings):
    settings.METRICS_TOKEN = TOKEN


def job_in(workspace, state, **fields):
    job = Job.objects.create(workspace=workspace, kind="noop", max_attempts=5)
    Job.objects.filter(pk=job.pk).update(state=state, **fields)
    return job


def scrape(client) -> dict[tuple[str, tuple], float]:
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def test_metrics_are_not_found_when_no_token_is_configured(client, db, settings):
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 404


def test_metrics_without_credentials_are_unauthorized(client, db, metrics_on):
    response = client.get("/metrics")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_metrics_with_a_wrong_token_are_unauthorized(client, db, metrics_on):
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer not-the-token").status_code == 401


def test_metrics_are_not_served_to_a_staff_session_without_the_token(client, django_user_model, metrics_on):
    staff = django_user_model.objects.create_user("sam", is_staff=True)
    client.force_login(staff)
    assert client.get("/metrics").status_code == 401


def test_metrics_report_the_dashboard_figures(client, workspace, metrics_on):
    job_in(workspace, State.QUEUED, run_after=Now() - timedelta(seconds=120))
    job_in(workspace, State.QUEUED)
    for waiting in (10, 20, 30):
        job_in(
            workspace,
            State.COMPLETED,
            attempt=1,
            waiting_seconds=waiting,
            finished_at=Now() - timedelta(minutes=3),
        )
    lost = job_in(workspace, State.RETRYING, run_after=Now() + timedelta(minutes=5))
    Attempt.objects.create(
        job=lost, number=1, lease_token=uuid.uuid4(), outcome=Attempt.Outcome.STALE, finished_at=Now()
    )
    OutboxMessage.objects.create(workspace=workspace, topic="job.completed", payload={})
    failed = OutboxMessage.objects.create(workspace=workspace, topic="job.completed", payload={})
    OutboxMessage.objects.filter(pk=failed.pk).update(failed_at=Now())

    samples = scrape(client)

    assert samples[("pricesheet_jobs", (("state", "queued"),))] == 2
    assert samples[("pricesheet_jobs", (("state", "completed"),))] == 3
    assert samples[("pricesheet_jobs", (("state", "cancelled"),))] == 0
    assert samples[("pricesheet_oldest_claimable_job_age_seconds", ())] == pytest.approx(120, abs=1)
    assert samples[("pricesheet_jobs_completed_last_hour", ())] == 3
    assert samples[("pricesheet_job_phase_seconds", (("phase", "waiting"), ("quantile", "0.5")))] == 20
    assert samples[
        ("pricesheet_job_phase_seconds", (("phase", "waiting"), ("quantile", "0.95")))
    ] == pytest.approx(29)
    assert samples[("pricesheet_job_phase_jobs", (("phase", "review"),))] == 0
    assert samples[("pricesheet_attempts_lost_last_24h", (("outcome", "stale"),))] == 1
    assert samples[("pricesheet_attempts_lost_last_24h", (("outcome", "expired"),))] == 0
    assert samples[("pricesheet_outbox_pending_messages", ())] == 1
    assert samples[("pricesheet_outbox_failed_messages", ())] == 1


def test_metrics_use_the_prometheus_text_format(client, db, metrics_on):
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    assert b"# TYPE pricesheet_jobs gauge" in response.content


def test_metrics_speak_openmetrics_when_the_scraper_asks(client, db, metrics_on):
    response = client.get(
        "/metrics",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
        HTTP_ACCEPT="application/openmetrics-text; version=1.0.0",
    )
    assert response["Content-Type"].startswith("application/openmetrics-text")
    assert response.content.rstrip().endswith(b"# EOF")
