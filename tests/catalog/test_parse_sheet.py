"""The `parse_sheet` job end to end: stored sheet -> extraction -> validation ->
publication or review, with the built-in extractor and a model behind a
local OpenAI-compatible server."""

import signal
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

import openpyxl
import pytest
from django.db import connection
from django.db.models.functions import Now

from catalog.models import CatalogItem, CatalogRevision, Supplier
from catalog.services import pricesheet_store, supplier_get_or_create
from catalog.storage import sheets_storage
from jobs import backoff
from jobs.models import Attempt, Job, State
from jobs.services import job_accept_output, job_admit, job_claim_next
from jobs.worker import Worker
from tests.catalog.sheets import ENTITY_BOMB_SHEET, minimal_xlsx
from tests.fake_llm import FakeProvider
from tests.helpers import wait_for

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "real"

CLEAN_CSV = b'SKU,Description,Unit,Price,Currency\nA-1,Apples,kg,1.50,EUR\nB-2,Bananas,kg,"2,25",EUR\n'
NO_CURRENCY_CSV = b"SKU,Description,Unit,Price\nA-1,Apples,kg,1.50\nB-2,Bananas,kg,2.25\n"


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def admit_sheet(workspace, name: str, data: bytes, supplier: str | None = "Fruit Co"):
    supplier_row = supplier_get_or_create(workspace=workspace, name=supplier) if supplier else None
    sheet = pricesheet_store(workspace=workspace, chunks=[data], original_name=name, supplier=supplier_row)
    job, _ = job_admit(
        workspace_id=workspace.pk,
        kind="parse_sheet",
        payload={"sheet_id": str(sheet.pk), "supplier_id": supplier_row.pk if supplier_row else None},
        fingerprint=sheet.sha256,
    )
    return job


def run_until_idle(worker=None):
    worker = worker or Worker(worker_id="test")
    while worker.run_one():
        pass


def make_due(job):
    Job.objects.filter(pk=job.pk).update(run_after=Now() - timedelta(seconds=1))


def test_clean_sheet_is_published_as_one_revision(workspace):
    job = admit_sheet(workspace, "fruit.csv", CLEAN_CSV)
    run_until_idle()
    job.refresh_from_db()
    revision = CatalogRevision.objects.get(job=job)
    assert job.state == State.COMPLETED
    assert job.result == {"revision_id": str(revision.public_id), "item_count": 2}
    assert revision.supplier.current_revision_id == revision.pk
    assert revision.attempt == 1
    items = {i.sku: (str(i.unit_price), i.currency, i.source_row) for i in revision.items.all()}
    assert items == {"A-1": ("1.500000", "EUR", 2), "B-2": ("2.250000", "EUR", 3)}


def test_sheet_without_currency_waits_for_review_unpublished(workspace):
    job = admit_sheet(workspace, "fruit.csv", NO_CURRENCY_CSV)
    run_until_idle()
    job.refresh_from_db()
    assert job.state == State.AWAITING_REVIEW
    assert not CatalogRevision.objects.filter(job=job).exists()
    codes = {flag["code"] for item in job.output["items"] for flag in item["flags"]}
    # Besides the currency, only the column model's doubt on a column of two rows, shown
    # because the sheet goes to a reviewer anyway.
    assert "missing_currency" in codes and codes <= {"missing_currency", "uncertain_column"}
    assert all(item["currency"] is None for item in job.output["items"])


def test_second_supplier_sheet_moves_the_current_revision(workspace):
    first = admit_sheet(workspace, "fruit.csv", CLEAN_CSV)
    second = admit_sheet(workspace, "fruit-v2.csv", CLEAN_CSV.replace(b"1.50", b"1.60"))
    run_until_idle()
    first_revision = CatalogRevision.objects.get(job=first)
    second_revision = CatalogRevision.objects.get(job=second)
    assert first_revision.supplier.current_revision_id == second_revision.pk
    assert CatalogItem.objects.get(revision=second_revision, sku="A-1").unit_price == Decimal("1.6")


def test_missing_sheet_header_needs_attention_with_reason(workspace):
    job = admit_sheet(workspace, "notes.csv", b"hello,world\nthis,is\nnot,prices\n")
    run_until_idle()
    job.refresh_from_db()
    assert job.state == State.NEEDS_ATTENTION
    assert job.attempt == 1
    assert "price" in job.reason.lower()


# --- the model-backed extractor ------------------------------------------------------


@pytest.fixture
def provider(settings, monkeypatch):
    fake = FakeProvider()
    settings.EXTRACTOR = "openai"
    settings.LLM_BASE_URL = fake.url
    settings.LLM_API_KEY = "test-key"
    settings.LLM_MODEL = "fake-model"
    settings.LLM_TIMEOUT_SECONDS = 2
    # A failed attempt's retry waits its whole backoff (minutes, no jitter): full jitter could make
    # it due at once, and run_until_idle would run it before the test looks; make_due runs it.
    settings.JOB_BACKOFF_BASE_SECONDS = 3600
    monkeypatch.setattr(backoff, "random", SimpleNamespace(random=lambda: 0.0))
    yield fake
    fake.close()


def item(sku, price, row, currency="EUR", description="Apples"):
    return {
        "sku": sku,
        "description": description,
        "unit": "kg",
        "pack_size": None,
        "unit_price": price,
        "currency": currency,
        "source": {"sheet": "Sheet1", "row": row},
    }


def test_model_output_is_published_with_request_id_and_usage(workspace, provider):
    job = admit_sheet(workspace, "fruit.csv", CLEAN_CSV)
    run_until_idle()
    job.refresh_from_db()
    assert job.state == State.COMPLETED
    assert CatalogRevision.objects.get(job=job).item_count == 2
    attempt = Attempt.objects.get(job=job)
    assert attempt.provider_request_ids == ["req_1"]
    assert attempt.token_usage == {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


@pytest.mark.parametrize("extractor", ["builtin", "openai"])
def test_one_child_reads_extracts_and_validates_whichever_extractor(
    workspace, provider, settings, monkeypatch, extractor
):
    from catalog import sandbox, validation

    settings.EXTRACTOR = extractor
    started = []
    run_parse = sandbox.run_parse

    def counted(request, **kwargs):
        started.append(request["extractor"])
        return run_parse(request, **kwargs)

    def not_here(*args, **kwargs):
        raise AssertionError("validation ran in the worker, not in the parse child")

    monkeypatch.setattr(sandbox, "run_parse", counted)
    # The child is another interpreter: only the worker's validation is replaced.
    monkeypatch.setattr(validation, "validate_items", not_here)
    monkeypatch.setattr(validation, "check_model_items", not_here)
    provider.script.append((200, {"items": [item("A-1", "1.50", 2), item("B-2", "9.99", 3)]}, 0))
    job = admit_sheet(workspace, "fruit.csv", CLEAN_CSV)

    run_until_idle()

    job.refresh_from_db()
    assert started == [extractor]
    assert job.output["extractor"] == extractor
    flags = {(i["sku"], f["code"]) for i in job.output["items"] for f in i["flags"]}
    assert (("B-2", "unsupported_source") in flags) == (extractor == "openai")
    assert len(provider.requests) == (1 if extractor == "openai" else 0)


def test_the_extractor_setting_names_a_registered_extractor(settings):
    from catalog.extractors import EXTRACTORS

    assert set(settings.EXTRACTOR_CHOICES) == set(EXTRACTORS)
    assert EXTRACTORS[settings.EXTRACTOR].name == settings.EXTRACTOR


def test_model_citing_a_row_without_the_value_is_flagged(workspace, provider):
    provider.script.append(
        (200, {"items": [item("A-1", "1.50", 3), item("B-2", "2.25", 3, description="Bananas")]}, 0)
    )
    job = admit_sheet(workspace, "fruit.csv", CLEAN_CSV)
    run_until_idle()
    job.refresh_from_db()
    assert job.state == State.AWAITING_REVIEW
    flags = {(i["sku"], f["code"]) for i in job.output["items"] for f in i["flags"]}
    assert ("A-1", "unsupported_source") in flags
    assert ("B-2", "unsupported_source") not in flags
    assert not CatalogRevision.objects.filter(job=job).exists()


def test_model_server_error_retries_and_second_attempt_publishes(workspace, provider):
    provider.script.append((500, {"error": {"message": "overloaded"}}, 0))
    job = admit_sheet(workspace, "fruit.csv", CLEAN_CSV)
    run_until_idle()
    job.refresh_from_db()
    assert job.state == State.RETRYING
    assert "500" in job.reason
    make_due(job)
    run_until_idle()
    job.refresh_from_db()
    assert job.state == State.COMPLETED
    assert CatalogRevision.objects.get(job=job).attempt == 2
    assert list(Attempt.objects.filter(job=job).values_list("outcome", flat=True)) == ["retry", "succeeded"]


def test_model_timeout_is_transient(workspace, provider):
    provider.script.append((200, {"items": []}, 5))  # answers after the 2 s timeout
    job = admit_sheet(workspace, "fruit.csv", CLEAN_CSV)
    run_until_idle()
    job.refresh_from_db()
    assert job.state == State.RETRYING
    assert job.reason == "attempt 1 failed, retrying: the model endpoint did not answer within 2s"


def test_model_bad_request_needs_attention_without_retry(workspace, provider):
    provider.script.append((400, {"error": {"message": "model not found"}}, 0))
    job = admit_sheet(workspace, "fruit.csv", CLEAN_CSV)
    run_until_idle()
    job.refresh_from_db()
    assert (job.state, job.attempt) == (State.NEEDS_ATTENTION, 1)
    assert "400" in job.reason
    assert Attempt.objects.get(job=job).provider_request_ids == ["req_1"]


def test_model_answer_breaking_the_schema_is_not_published(workspace, provider):
    provider.script.append((200, {"items": [{"sku": "A-1", "price": 1.5}]}, 0))
    job = admit_sheet(workspace, "fruit.csv", CLEAN_CSV)
    run_until_idle()
    job.refresh_from_db()
    assert job.state == State.NEEDS_ATTENTION
    assert "schema" in job.reason
    assert not CatalogRevision.objects.filter(job=job).exists()


def test_retry_reuses_the_table_checkpoint(workspace, provider):
    provider.script.append((503, {"error": {"message": "busy"}}, 0))
    job = admit_sheet(workspace, "fruit.csv", CLEAN_CSV)
    run_until_idle()
    # The stored file is gone: only the checkpoint can feed attempt 2.
    from catalog.models import PriceSheet

    sheets_storage().delete(PriceSheet.objects.get(pk=job.payload["sheet_id"]).storage_path)
    make_due(job)
    run_until_idle()
    job.refresh_from_db()
    assert job.state == State.COMPLETED
    assert job.attempt == 2


def test_a_reviewers_mapping_is_read_in_one_parse_child_whichever_extractor(workspace, provider, monkeypatch):
    from catalog import sandbox

    started = []
    run_parse = sandbox.run_parse

    def counted(request, **kwargs):
        started.append(request["extractor"])
        return run_parse(request, **kwargs)

    monkeypatch.setattr(sandbox, "run_parse", counted)
    mapping = {
        "sheets": [
            {
                "sheet": "Sheet1",
                "header_row": 1,
                "columns": {
                    "sku": "A",
                    "description": "B",
                    "unit": "C",
                    "pack_size": None,
                    "unit_price": "D",
                    "currency": "E",
                },
            }
        ],
        "currency": None,
        "set_by": "rey",
        "set_at": "2026-12-01T00:00:00+00:00",
    }
    job = admit_sheet(workspace, "fruit.csv", CLEAN_CSV)
    Job.objects.filter(pk=job.pk).update(payload={**job.payload, "mapping": mapping})

    run_until_idle()

    job.refresh_from_db()
    assert len(started) == 1  # read and extracted by one child, not read, then extracted
    assert job.state == State.AWAITING_REVIEW  # a reviewer's mapping comes back to them
    assert job.output["extractor"] == "builtin" and job.output["layout"]["source"] == "reviewer"
    assert [i["sku"] for i in job.output["items"]] == ["A-1", "B-2"]
    assert Attempt.objects.get(job=job).provider_request_ids == []  # the model was not asked


# --- real worker processes ------------------------------------------------------------


def bad_inputs(tmp_path) -> dict[str, tuple[str, bytes]]:
    zip_bomb = tmp_path / "zip-bomb.xlsx"
    minimal_xlsx(zip_bomb, b"<worksheet/>", extra={"xl/media/zeros.bin": b"\0" * (50 * 1024 * 1024)})
    entity_bomb = tmp_path / "entity-bomb.xlsx"
    minimal_xlsx(entity_bomb, ENTITY_BOMB_SHEET)
    many_rows = b"SKU,Description,Price,Currency\n" + b"".join(
        b"S%d,Item %d,1.00,EUR\n" % (n, n) for n in range(200_000)
    )
    return {
        "empty": ("empty.csv", b""),
        "not what the name says": ("prices.xlsx", b"%PDF-1.4 this is a pdf\n" * 20),
        "zip bomb": ("zip-bomb.xlsx", zip_bomb.read_bytes()),
        "entity bomb": ("entity-bomb.xlsx", entity_bomb.read_bytes()),
        "no header": ("notes.csv", b"hello,world\nthis,is\nnot,prices\n"),
        "200,000 rows": ("huge.csv", many_rows),
    }


EXPECTED_REASON = {
    "empty": "empty",
    "not what the name says": "PDF",
    "zip bomb": "zip bomb",
    "entity bomb": "DTD",
    "no header": "header",
    "200,000 rows": "more than 150000 rows",
}


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_bad_inputs_need_attention_and_the_worker_goes_on(workspace, processes, tmp_path, media):
    jobs = {label: admit_sheet(workspace, name, data) for label, (name, data) in bad_inputs(tmp_path).items()}
    good = admit_sheet(workspace, "fruit.csv", CLEAN_CSV)
    worker = processes.worker("w", "--burst", MEDIA_ROOT=media)
    assert worker.wait(timeout=120) == 0, processes.output(worker)
    for label, job in jobs.items():
        job.refresh_from_db()
        assert (label, job.state, job.attempt) == (label, State.NEEDS_ATTENTION, 1)
        assert EXPECTED_REASON[label].lower() in job.reason.lower(), (label, job.reason)
    good.refresh_from_db()
    assert good.state == State.COMPLETED


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_paused_worker_after_model_call_cannot_publish(workspace, processes, media):
    """The first article's rehearsal with a real publication: A's model call
    is slow; A is paused; its lease expires; B takes over and publishes; A
    resumes with its answer: zero rows, no second revision, attempt 1 stale."""
    fake = FakeProvider()
    try:
        fake.script.append((200, {"items": [item("A-1", "1.50", 2), item("B-2", "2.25", 3)]}, 60))
        env = {
            "EXTRACTOR": "openai",
            "LLM_BASE_URL": fake.url,
            "LLM_API_KEY": "k",
            "LLM_MODEL": "fake",
            "JOB_LEASE_SECONDS": 2,
            "JOB_RECOVERY_INTERVAL_SECONDS": 3600,
            "JOB_POLL_INTERVAL_SECONDS": 0.2,
            "MEDIA_ROOT": media,
        }
        job = admit_sheet(workspace, "fruit.csv", CLEAN_CSV)
        a = processes.worker("worker-a", **env)
        wait_for(lambda: len(fake.requests) == 1, timeout=60, message="A's model call")
        a.send_signal(signal.SIGSTOP)

        def lease_expired():
            with connection.cursor() as cursor:
                cursor.execute("SELECT lease_until < clock_timestamp() FROM jobs_job WHERE id = %s", [job.pk])
                return cursor.fetchone()[0]

        wait_for(lease_expired, timeout=10, message="A's lease to expire")
        assert processes.start("recoverjobs").wait(timeout=60) == 0
        processes.worker("worker-b", **env)
        wait_for(
            lambda: Job.objects.get(pk=job.pk).state == State.COMPLETED, timeout=30, message="B to publish"
        )
        fake.release.set()  # A's slow answer arrives
        a.send_signal(signal.SIGCONT)
        wait_for(
            lambda: Attempt.objects.get(job=job, number=1).outcome == "stale",
            timeout=30,
            message="A's late acceptance to be refused",
        )
    finally:
        fake.close()
    revisions = list(CatalogRevision.objects.filter(job=job).values_list("attempt", flat=True))
    assert revisions == [2]
    assert Attempt.objects.get(job=job, number=2).outcome == "succeeded"
    # A's answer is refused at its first write after resuming: the accept
    # itself, or the progress heartbeat just before it.
    stale = Attempt.objects.get(job=job, number=1)
    assert stale.diagnostic["rejected"] in ("accept", "heartbeat")
    if stale.diagnostic["rejected"] == "accept":
        assert [i["sku"] for i in stale.diagnostic["output"]["items"]] == ["A-1", "B-2"]


# --- the real supplier sheets ------------------------------------------------------------


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus/real is not present")
def test_every_real_sheet_ends_in_a_sensible_state(workspace):
    jobs = {
        path.name: admit_sheet(workspace, path.name, path.read_bytes(), supplier=path.stem)
        for path in sorted(CORPUS.iterdir())
    }
    run_until_idle()
    assert len(jobs) == 26
    for name, job in jobs.items():
        job.refresh_from_db()
        assert job.state in (State.COMPLETED, State.AWAITING_REVIEW, State.NEEDS_ATTENTION), name
        assert job.attempt == 1, (name, job.reason)
        if job.state == State.NEEDS_ATTENTION:
            assert "item list" in job.reason or "header" in job.reason, (name, job.reason)
        else:
            assert job.output["items"], name
        if job.state == State.AWAITING_REVIEW:
            assert any(i["flags"] for i in job.output["items"]) or job.output["needs_confirmation"], name
        if job.state == State.COMPLETED:
            assert CatalogRevision.objects.filter(job=job).count() == 1
            assert not any(i["flags"] for i in job.output["items"]), name


def test_xlsx_sheet_with_currency_in_header_is_published(workspace, tmp_path):
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Prices"
    for row in (
        ["Acme price list 2026"],
        [],
        ["Art.-Nr.", "Bezeichnung", "Einheit", "Preis (EUR)"],
        ["X-1", "Schraube", "Stk", "1.234,50"],
        ["X-2", "Mutter", "Stk", "0,45"],
    ):
        sheet.append(row)
    path = tmp_path / "de.xlsx"
    book.save(path)
    job = admit_sheet(workspace, "de.xlsx", path.read_bytes())
    run_until_idle()
    job.refresh_from_db()
    assert job.state == State.COMPLETED, job.output
    prices = dict(CatalogItem.objects.filter(revision__job=job).values_list("sku", "unit_price"))
    assert {sku: str(price) for sku, price in prices.items()} == {"X-1": "1234.500000", "X-2": "0.450000"}


class PublishBroke(Exception):
    pass


@pytest.mark.django_db(transaction=True)
def test_a_publication_failing_after_its_catalog_writes_leaves_the_accept_undone(workspace, monkeypatch):
    """Publication shares the accept's transaction. Outside any test
    transaction (every statement commits on its own unless an atomic block
    holds it), a publish step that raises after writing the revision, its
    items and the supplier's current revision leaves none of them, and the
    guarded UPDATE of the accept is undone too: the job is still running
    under the same claim and its attempt has not succeeded."""
    from catalog import services as catalog_services

    job = admit_sheet(workspace, "fruit.csv", CLEAN_CSV)
    claim = job_claim_next(worker_id="w1")
    written = []

    def outbox_write_then_break(**kwargs):
        # The last step of revision_publish: everything else is written by now.
        written.append(
            (CatalogRevision.objects.count(), CatalogItem.objects.count(), Job.objects.get(pk=job.pk).state)
        )
        raise PublishBroke("the publish step broke after writing catalog rows")

    monkeypatch.setattr(catalog_services, "outbox_write", outbox_write_then_break)
    items = [
        {
            "sku": "A-1",
            "description": "Apples",
            "unit": "kg",
            "pack_size": None,
            "unit_price": "1.50",
            "currency": "EUR",
            "source": {"sheet": "Sheet1", "row": 2},
        }
    ]
    assert not connection.in_atomic_block
    with pytest.raises(PublishBroke):
        job_accept_output(
            claim=claim,
            output={"items": items},
            publish=lambda job: catalog_services.revision_publish(job=job),
        )

    assert written == [(1, 1, State.COMPLETED)]  # the writes happened, inside the transaction
    assert CatalogRevision.objects.count() == 0
    assert CatalogItem.objects.count() == 0
    job.refresh_from_db()
    assert job.state == State.RUNNING
    assert (job.attempt, job.lease_token) == (claim.attempt, claim.token)
    assert job.result is None
    assert Attempt.objects.get(job=job, number=claim.attempt).outcome == Attempt.Outcome.RUNNING
    assert Supplier.objects.get(pk=job.payload["supplier_id"]).current_revision_id is None
