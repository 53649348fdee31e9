"""Model-backed `parse_sheet` jobs under stress: provider records written as
each call returns, and SIGTERM while a model call is in flight (real worker
processes against a local OpenAI-compatible server on 127.0.0.1)."""

import signal

import pytest

from catalog.services import pricesheet_store, supplier_get_or_create
from jobs.models import Attempt, Job, State
from jobs.services import job_admit
from jobs.worker import Worker
from tests.fake_llm import FakeProvider
from tests.helpers import wait_for

CLEAN_CSV = b"SKU,Description,Unit,Price,Currency\nA-1,Apples,kg,1.50,EUR\nB-2,Bananas,kg,2.25,EUR\n"
# 250 item rows: two model chunks of at most 200 rows.
LONG_CSV = b"SKU,Description,Unit,Price,Currency\n" + b"".join(
    b"S-%d,Item %d,kg,1.%02d,EUR\n" % (n, n, n % 100) for n in range(1, 251)
)
USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def fake():
    provider = FakeProvider()
    yield provider
    provider.close()


def admit_sheet(workspace, data: bytes):
    supplier = supplier_get_or_create(workspace=workspace, name="Fruit Co")
    sheet = pricesheet_store(
        workspace=workspace, chunks=[data], original_name="prices.csv", supplier=supplier
    )
    job, _ = job_admit(
        workspace_id=workspace.pk,
        kind="parse_sheet",
        payload={"sheet_id": str(sheet.pk), "supplier_id": supplier.pk},
        fingerprint=sheet.sha256,
    )
    return job


def model_env(fake, media) -> dict:
    return {
        "EXTRACTOR": "openai",
        "LLM_BASE_URL": fake.url,
        "LLM_API_KEY": "k",
        "LLM_MODEL": "fake",
        "LLM_TIMEOUT_SECONDS": 30,
        "JOB_LEASE_SECONDS": 2,
        "JOB_RECOVERY_INTERVAL_SECONDS": 0.25,
        "JOB_POLL_INTERVAL_SECONDS": 0.2,
        "MEDIA_ROOT": media,
    }


def item(sku, price, row):
    return {
        "sku": sku,
        "description": "Fruit",
        "unit": "kg",
        "pack_size": None,
        "unit_price": price,
        "currency": "EUR",
        "source": {"sheet": "Sheet1", "row": row},
    }


def test_first_chunk_records_survive_a_failing_second_chunk(workspace, fake, settings):
    settings.EXTRACTOR = "openai"
    settings.LLM_BASE_URL = fake.url
    settings.LLM_API_KEY = "k"
    settings.LLM_MODEL = "fake"
    fake.script.append((200, {"items": [item("S-1", "1.01", 2)]}, 0))
    fake.script.append((400, {"error": {"message": "context too long"}}, 0))
    job = admit_sheet(workspace, LONG_CSV)

    assert Worker(worker_id="w").run_one() is True

    job.refresh_from_db()
    assert (job.state, job.attempt) == (State.NEEDS_ATTENTION, 1)
    attempt = Attempt.objects.get(job=job, number=1)
    # Chunk 1's request id and usage, then the failed call's request id.
    assert attempt.provider_request_ids == ["req_1", "req_2"]
    assert attempt.token_usage == USAGE
    assert len(fake.requests) == 2


def test_first_chunk_records_survive_a_connection_failure(workspace, fake, settings):
    settings.EXTRACTOR = "openai"
    settings.LLM_BASE_URL = fake.url
    settings.LLM_API_KEY = "k"
    settings.LLM_MODEL = "fake"
    settings.LLM_TIMEOUT_SECONDS = 0.5
    fake.script.append((200, {"items": [item("S-1", "1.01", 2)]}, 0))
    fake.script.append((200, {"items": []}, 5))  # the second chunk times out
    job = admit_sheet(workspace, LONG_CSV)

    Worker(worker_id="w").run_one()

    job.refresh_from_db()
    assert job.state == State.RETRYING
    attempt = Attempt.objects.get(job=job, number=1)
    assert (attempt.provider_request_ids, attempt.token_usage) == (["req_1"], USAGE)


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_sigterm_during_a_model_call_longer_than_the_lease_completes_the_job(
    workspace, processes, fake, media
):
    # The answer comes 7 s after the request, with a 2 s lease.
    fake.script.append((200, {"items": [item("A-1", "1.50", 2), item("B-2", "2.25", 3)]}, 7))
    job = admit_sheet(workspace, CLEAN_CSV)
    worker = processes.worker("worker-a", **model_env(fake, media))
    wait_for(lambda: len(fake.requests) == 1, timeout=60, message="the model call")

    worker.send_signal(signal.SIGTERM)

    assert worker.wait(timeout=60) == 0, processes.output(worker)
    job.refresh_from_db()
    # The output in hand was accepted on the first attempt (published, or
    # staged for review when the model's answer is flagged), never released.
    assert job.attempt == 1 and job.state in (State.COMPLETED, State.AWAITING_REVIEW)
    assert list(Attempt.objects.filter(job=job).values_list("number", "outcome")) == [(1, "succeeded")]
    assert len(job.output["items"]) == 2
    assert Attempt.objects.get(job=job).provider_request_ids == ["req_1"]


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_sigterm_releases_a_model_job_before_its_next_chunk(workspace, processes, fake, media):
    fake.script.append((200, {"items": [item("S-1", "1.01", 2)]}, 4))
    job = admit_sheet(workspace, LONG_CSV)
    worker = processes.worker("worker-a", **model_env(fake, media))
    wait_for(lambda: len(fake.requests) == 1, timeout=60, message="the first chunk's call")

    worker.send_signal(signal.SIGTERM)

    assert worker.wait(timeout=60) == 0, processes.output(worker)
    assert len(fake.requests) == 1  # the second chunk was never asked for
    job.refresh_from_db()
    assert (job.state, job.lease_token) == (State.RETRYING, None)
    attempt = Attempt.objects.get(job=job, number=1)
    assert attempt.outcome == "released"
    assert (attempt.provider_request_ids, attempt.token_usage) == (["req_1"], USAGE)
    assert not Job.objects.filter(pk=job.pk, state=State.COMPLETED).exists()
