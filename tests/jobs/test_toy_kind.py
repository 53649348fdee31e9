"""A second job kind, registered here and nowhere in the product, goes
through admission, claim, accept, the status API, the items view and the
admin with nothing but what it registers: `jobs` is a library."""

import io

import pytest
from django.core.management import call_command
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.test import Client
from django.utils.html import format_html

from accounts.services import apitoken_create
from jobs import registry
from jobs.models import Attempt, Job, OutboxMessage, State
from jobs.selectors import job_items
from jobs.services import job_admit, job_claim_next
from jobs.worker import Worker

KIND = "count_words"


def count_words(ctx) -> None:
    """Count the words of `text`; a text with a word over ten letters waits
    for a person to look at it."""
    words = ctx.payload.get("text", "").split()
    ctx.heartbeat(len(words), len(words))
    output = {"words": [{"word": w, "letters": len(w)} for w in words]}
    ctx.accept(output, needs_review=any(len(w) > 10 for w in words))


@pytest.fixture
def toy_kind():
    registry.register(
        KIND,
        status_fields=lambda job: {"links": {"toy": f"/toy/{job.pk}/"}, "language": "en"},
        items=lambda job: (job.output or {}).get("words") or [],
        admin_fields={"text": lambda job: job.payload.get("text", "")},
        admin_output=lambda job: format_html(
            "<p id='toy-output'>{} word(s)</p>", len((job.output or {}).get("words") or [])
        ),
        review_link=lambda job: f"/toy/{job.pk}/look",
    )(count_words)
    yield registry.get_kind(KIND)
    registry.unregister(KIND)


@pytest.fixture
def api_client(member):
    return Client(HTTP_AUTHORIZATION=f"Bearer {apitoken_create(user=member)[1]}")


@pytest.fixture
def superuser(django_user_model, db):
    return django_user_model.objects.create_superuser("root")


def admit(workspace, text: str) -> Job:
    job, created = job_admit(workspace_id=workspace.pk, kind=KIND, payload={"text": text})
    assert created
    return job


def test_a_toy_job_is_claimed_run_and_completed_by_the_worker(toy_kind, workspace):
    job = admit(workspace, "one two three")
    assert Worker(worker_id="toy").run_one()
    job.refresh_from_db()
    assert job.state == State.COMPLETED
    assert job.output == {
        "words": [
            {"word": "one", "letters": 3},
            {"word": "two", "letters": 3},
            {"word": "three", "letters": 5},
        ]
    }
    assert Attempt.objects.get(job=job).outcome == Attempt.Outcome.SUCCEEDED
    topics = list(
        OutboxMessage.objects.filter(payload__job_id=str(job.pk))
        .order_by("created_at")
        .values_list("topic", flat=True)
    )
    assert topics == ["job.accepted", "job.completed"]


def test_toy_jobs_enqueued_by_the_command_are_all_accepted_by_one_worker(toy_kind, workspace):
    call_command("enqueue", KIND, workspace=workspace.slug, count=5, stdout=io.StringIO())
    worker = Worker(worker_id="toy")
    runs = 0
    while worker.run_one():  # short jobs: claimed and accepted in groups
        runs += 1
    assert runs == 5
    assert set(Job.objects.filter(kind=KIND).values_list("state", flat=True)) == {State.COMPLETED}
    assert Attempt.objects.filter(job__kind=KIND, outcome=Attempt.Outcome.SUCCEEDED).count() == 5
    assert OutboxMessage.objects.filter(topic="job.completed", payload__kind=KIND).count() == 5


def test_a_worker_claims_a_toy_job_only_while_the_kind_is_registered(toy_kind, workspace):
    admit(workspace, "words")
    registry.unregister(KIND)
    assert not Worker(worker_id="old").run_one()  # an older worker does not know the kind
    registry.register(KIND)(count_words)
    claim = job_claim_next(worker_id="new", kinds=registry.kinds())
    assert claim is not None and claim.kind == KIND


def test_the_status_api_shows_what_the_toy_kind_adds(toy_kind, workspace, api_client):
    job = admit(workspace, "a supercalifragilistic word")
    Worker(worker_id="toy").run_one()

    status = api_client.get(f"/api/jobs/{job.pk}")

    assert status.status_code == 200
    body = status.json()
    assert body["state"] == State.AWAITING_REVIEW
    assert body["language"] == "en"
    assert body["progress"] == {"done": 3, "total": 3}
    assert body["links"]["toy"] == f"/toy/{job.pk}/"
    assert body["links"]["review"] == f"/toy/{job.pk}/look"
    assert body["links"]["self"] == f"/api/jobs/{job.pk}"
    assert "columns" not in body and "items" not in body["links"]
    listed = api_client.get("/api/jobs").json()["results"]
    assert [(j["id"], j["language"]) for j in listed] == [(str(job.pk), "en")]


def test_the_items_view_is_the_toy_kinds_own(toy_kind, workspace):
    # Through the selector the items endpoint calls: the product's API
    # document describes the product's items, not this kind's.
    job = admit(workspace, "a supercalifragilistic word")
    Worker(worker_id="toy").run_one()
    job.refresh_from_db()
    assert [w["word"] for w in job_items(job)] == ["a", "supercalifragilistic", "word"]


def test_a_kind_without_an_items_view_has_no_items(toy_kind, workspace, api_client):
    job, _ = job_admit(workspace_id=workspace.pk, kind="noop", payload={})
    Worker(worker_id="w").run_one()
    response = api_client.get(f"/api/jobs/{job.pk}/items")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"
    assert api_client.get(f"/api/jobs/{job.pk}").json()["state"] == State.COMPLETED


def test_the_admin_page_of_a_toy_job_shows_what_the_kind_registers(toy_kind, workspace, client, superuser):
    job = admit(workspace, "a supercalifragilistic word")
    Worker(worker_id="toy").run_one()
    client.force_login(superuser)

    page = client.get(f"/admin/jobs/job/{job.pk}/change/")

    assert page.status_code == 200
    html = page.content.decode()
    assert "<p id='toy-output'>3 word(s)</p>" in html or '<p id="toy-output">3 word(s)</p>' in html
    assert "<th>text</th><td>a supercalifragilistic word</td>" in html
    assert f'href="/toy/{job.pk}/look"' in html
    assert f'href="/jobs/{job.pk}/"' not in html  # no page of the product's kind
    assert client.get("/admin/jobs/job/").status_code == 200


def test_admin_cancel_and_retry_move_a_toy_job(toy_kind, workspace, client, superuser):
    job = admit(workspace, "one two")
    client.force_login(superuser)

    def act(action):
        return client.post(
            "/admin/jobs/job/",
            {"action": action, ACTION_CHECKBOX_NAME: [str(job.pk)], "post": "yes"},
            follow=True,
        )

    assert act("cancel").status_code == 200
    job.refresh_from_db()
    assert job.state == State.CANCELLED
    assert act("retry").status_code == 200
    job.refresh_from_db()
    assert job.state == State.QUEUED
    assert Worker(worker_id="toy").run_one()
    job.refresh_from_db()
    assert job.state == State.COMPLETED
