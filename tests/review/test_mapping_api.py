"""`POST /api/jobs/<id>/mapping` and remembered supplier layouts, end to end:
a refused sheet is mapped, read again by a real worker cycle,
approved and published; the supplier's next sheet of the same layout
publishes without review; a changed layout falls back to inference."""

import json

import pytest
from django.test import Client

from catalog.models import CatalogRevision, SupplierLayout
from accounts.services import apitoken_create
from catalog.services import pricesheet_store, supplier_get_or_create
from jobs.models import Job, OutboxMessage, State
from jobs.services import job_admit, job_cancel
from jobs.worker import Worker
from review.services import review_approve

SUPPLIER = "Zorblat Trading"


def bands_csv(bands=("0-1 kg", "1-2 kg", "2-5 kg", "5-10 kg"), *, extra_column: bool = False) -> bytes:
    """A supplier's rates by weight band and zone: a rate card, refused
    unless a reviewer maps it."""
    header = "Weight,Zone 1,Zone 2,Zone 3" + (",Zone 4" if extra_column else "")
    lines = [header]
    for n, band in enumerate(bands):
        prices = [f"{0.4 + n * 0.2 - k * 0.05:.2f}" for k in range(4 if extra_column else 3)]
        lines.append(",".join([band, *prices]))
    return ("\n".join(lines) + "\n").encode()


def headerless_csv(rows: int = 4, *, prefix: str = "K") -> bytes:
    """An item list without a header row: code, name, unit, price."""
    return "".join(
        f"{prefix}-{100 + n},Invented widget {prefix}{n},piece,{n + 1}.25\n" for n in range(rows)
    ).encode()


MAPPING = {
    "sheets": [
        {
            "sheet": "Sheet1",
            "header_row": 1,
            "columns": {
                "sku": None,
                "description": "A",
                "unit": None,
                "pack_size": None,
                "unit_price": "B",
                "currency": None,
            },
        }
    ],
    "currency": "EUR",
}
HEADERLESS_MAPPING = {
    "sheets": [
        {
            "sheet": "Sheet1",
            "header_row": None,
            "columns": {
                "sku": "A",
                "description": "B",
                "unit": "C",
                "pack_size": None,
                "unit_price": "D",
                "currency": None,
            },
        }
    ],
    "currency": "EUR",
}


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def bearer(user) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {apitoken_create(user=user)[1]}")


def admit(workspace, data: bytes, name="list.csv"):
    supplier = supplier_get_or_create(workspace=workspace, name=SUPPLIER)
    sheet = pricesheet_store(workspace=workspace, chunks=[data], original_name=name, supplier=supplier)
    job, _ = job_admit(
        workspace_id=workspace.pk,
        kind="parse_sheet",
        payload={"sheet_id": str(sheet.pk), "supplier_id": supplier.pk},
        fingerprint=sheet.sha256,
    )
    return job


def run_until_idle():
    worker = Worker(worker_id="test")
    while worker.run_one():
        pass


def refused_job(workspace) -> Job:
    job = admit(workspace, bands_csv())
    run_until_idle()
    job.refresh_from_db()
    return job


def post_mapping(client, job, body=None, **changes):
    body = dict(MAPPING if body is None else body)
    body.setdefault("version", job.version)
    body.update(changes)
    return client.post(f"/api/jobs/{job.pk}/mapping", json.dumps(body), content_type="application/json")


def test_a_refused_sheet_reports_its_columns_and_where_to_send_a_mapping(workspace, reviewer):
    job = refused_job(workspace)
    assert job.state == State.NEEDS_ATTENTION
    body = bearer(reviewer).get(f"/api/jobs/{job.pk}").json()
    assert "looks like a rate card" in body["reason"]
    assert "a reviewer can still map its columns" in body["reason"]
    assert body["layout"]["source"] == "inferred"
    assert body["columns"][0]["sheet"] == "Sheet1" and body["columns"][0]["status"] == "refused"
    assert body["links"]["mapping"] == f"/api/jobs/{job.pk}/mapping"


def test_mapping_answers_202_and_the_job_is_queued_with_it_and_a_fresh_budget(workspace, reviewer):
    job = refused_job(workspace)
    response = post_mapping(bearer(reviewer), job)
    assert response.status_code == 202
    assert response.json() == {"id": str(job.pk), "state": "queued", "version": job.version + 1}
    job.refresh_from_db()
    assert job.state == State.QUEUED and job.output is None
    assert job.max_attempts == job.attempt + 5
    assert job.payload["mapping"]["set_by"] == "rey"
    assert job.payload["mapping"]["sheets"] == MAPPING["sheets"]
    assert job.payload["mapping"]["currency"] == "EUR"
    assert job.reason == "column mapping applied by rey"
    assert OutboxMessage.objects.filter(topic="job.requeued", payload__job_id=str(job.pk)).count() == 1


def test_a_mapped_sheet_comes_back_to_review_then_publishes_and_its_layout_is_remembered(workspace, reviewer):
    job = refused_job(workspace)
    assert post_mapping(bearer(reviewer), job).status_code == 202
    run_until_idle()
    job.refresh_from_db()
    assert job.state == State.AWAITING_REVIEW
    assert job.output["layout"]["source"] == "reviewer"
    assert job.output["layout"]["approved_by"] == "rey"
    assert [(i["description"], i["unit_price"], i["currency"], i["flags"]) for i in job.output["items"]] == [
        ("0-1 kg", "0.4", "EUR", []),
        ("1-2 kg", "0.6", "EUR", []),
        ("2-5 kg", "0.8", "EUR", []),
        ("5-10 kg", "1", "EUR", []),
    ]
    status = bearer(reviewer).get(f"/api/jobs/{job.pk}").json()
    assert status["columns"][0]["header_row"] == 1
    roles = {c["column"]: c["role"] for c in status["columns"][0]["columns"]}
    assert (roles["A"], roles["B"]) == ("description", "unit_price")
    assert status["layout"]["source"] == "reviewer"

    review_approve(user=reviewer, job_id=job.pk, expected_version=job.version)
    job.refresh_from_db()
    assert job.state == State.COMPLETED
    assert CatalogRevision.objects.get(job=job).items.count() == 4
    layout = SupplierLayout.objects.get()
    assert (layout.supplier.name, layout.approved_by_name, layout.sheet_names) == (SUPPLIER, "rey", "Sheet1")
    assert layout.mapping == {"sheets": MAPPING["sheets"], "currency": "EUR"}


def test_a_headerless_sheet_waits_for_confirmation_and_a_confirmed_mapping_is_remembered(workspace, reviewer):
    job = admit(workspace, headerless_csv())
    run_until_idle()
    job.refresh_from_db()
    assert job.state == State.AWAITING_REVIEW
    assert job.output["columns"][0]["needs_confirmation"] is True
    assert post_mapping(bearer(reviewer), job, HEADERLESS_MAPPING).status_code == 202
    run_until_idle()
    job.refresh_from_db()
    assert job.state == State.AWAITING_REVIEW
    assert [(i["sku"], i["currency"]) for i in job.output["items"]][:2] == [
        ("K-100", "EUR"),
        ("K-101", "EUR"),
    ]
    review_approve(user=reviewer, job_id=job.pk, expected_version=job.version)

    following = admit(workspace, headerless_csv(6, prefix="N"), name="list-2.csv")
    run_until_idle()
    following.refresh_from_db()
    assert following.state == State.COMPLETED
    assert following.output["layout"]["source"] == "remembered"
    assert CatalogRevision.objects.get(job=following).items.count() == 6


def _remember_layout(workspace, reviewer):
    job = refused_job(workspace)
    post_mapping(bearer(reviewer), job)
    run_until_idle()
    job.refresh_from_db()
    review_approve(user=reviewer, job_id=job.pk, expected_version=job.version)
    return SupplierLayout.objects.get()


def test_the_next_sheet_of_the_same_layout_publishes_without_review(workspace, reviewer):
    layout = _remember_layout(workspace, reviewer)
    job = admit(
        workspace, bands_csv(("0-0.5 kg", "0.5-1 kg", "1-3 kg", "3-5 kg", "5-10 kg")), name="list-2.csv"
    )
    run_until_idle()
    job.refresh_from_db()
    assert job.state == State.COMPLETED
    revision = CatalogRevision.objects.get(job=job)
    assert sorted(revision.items.values_list("description", flat=True)) == [
        "0-0.5 kg",
        "0.5-1 kg",
        "1-3 kg",
        "3-5 kg",
        "5-10 kg",
    ]
    assert set(revision.items.values_list("currency", flat=True)) == {"EUR"}
    status = bearer(reviewer).get(f"/api/jobs/{job.pk}").json()
    assert status["layout"] == {
        "source": "remembered",
        "approved_by": "rey",
        "approved_at": layout.approved_at.isoformat(),
        "layout_id": layout.pk,
    }
    assert any(
        note.startswith("read with the layout remembered for this supplier") for note in job.output["notes"]
    )


def test_a_changed_layout_falls_back_to_inference_and_says_so(workspace, reviewer):
    _remember_layout(workspace, reviewer)
    job = admit(workspace, bands_csv(extra_column=True), name="list-3.csv")
    run_until_idle()
    job.refresh_from_db()
    assert job.state != State.COMPLETED
    status = bearer(reviewer).get(f"/api/jobs/{job.pk}").json()
    assert status["layout"]["source"] == "inferred"
    assert "differs from the 1 remembered for this supplier" in status["reason"]
    assert not CatalogRevision.objects.filter(job=job).exists()


def test_a_stale_version_is_a_409_that_says_what_happened(workspace, reviewer):
    job = refused_job(workspace)
    client = bearer(reviewer)
    assert post_mapping(client, job).status_code == 202
    response = post_mapping(client, job)  # the same, stale, version again
    assert response.status_code == 409
    body = response.json()
    assert response["Content-Type"] == "application/problem+json"
    assert body["type"] == "/problems/version-conflict"
    assert body["state"] == "queued" and body["version"] == job.version + 1
    assert "column mapping applied by rey" in body["detail"]


def test_a_job_that_cannot_take_a_mapping_now_is_a_409(workspace, reviewer):
    job = refused_job(workspace)
    Job.objects.filter(pk=job.pk).update(state=State.CANCELLED)
    response = post_mapping(bearer(reviewer), job)
    assert response.status_code == 409
    assert response.json()["type"] == "/problems/not-mappable"


def test_a_member_without_the_reviewer_role_gets_403(workspace, reviewer, member):
    job = refused_job(workspace)
    response = post_mapping(bearer(member), job)
    assert response.status_code == 403
    assert response.json()["type"] == "/problems/forbidden"
    assert Job.objects.get(pk=job.pk).state == State.NEEDS_ATTENTION


def test_another_workspace_gets_the_same_404_as_an_unknown_job(workspace, reviewer, outsider):
    job = refused_job(workspace)
    response = post_mapping(bearer(outsider), job)
    unknown = bearer(outsider).post(
        "/api/jobs/00000000-0000-0000-0000-000000000000/mapping",
        json.dumps({**MAPPING, "version": 1}),
        content_type="application/json",
    )
    assert response.status_code == unknown.status_code == 404
    assert response.content == unknown.content


def test_no_credentials_is_a_401(workspace, reviewer):
    job = refused_job(workspace)
    assert post_mapping(Client(), job).status_code == 401


@pytest.mark.parametrize(
    "columns, message",
    [
        ({"unit_price": None}, "name the unit price column"),
        ({"sku": None, "description": None}, "a description column or a SKU column"),
        ({"unit": "Q"}, "unit column Q does not exist"),
        ({"unit": "B"}, "column B is given two roles"),
    ],
)
def test_an_impossible_mapping_is_a_422_and_changes_nothing(workspace, reviewer, columns, message):
    job = refused_job(workspace)
    sheet = dict(MAPPING["sheets"][0])
    sheet["columns"] = {**sheet["columns"], **columns}
    response = post_mapping(bearer(reviewer), job, {"sheets": [sheet], "currency": None})
    assert response.status_code == 422
    body = response.json()
    assert body["type"] == "/problems/invalid-mapping"
    assert any(message in error for error in body["errors"])
    after = Job.objects.get(pk=job.pk)
    assert (after.state, after.version) == (State.NEEDS_ATTENTION, job.version)


def test_a_missing_version_or_a_body_that_is_not_json_is_a_400(workspace, reviewer):
    job = refused_job(workspace)
    client = bearer(reviewer)
    no_version = client.post(
        f"/api/jobs/{job.pk}/mapping", json.dumps(MAPPING), content_type="application/json"
    )
    not_json = client.post(f"/api/jobs/{job.pk}/mapping", "sheets", content_type="application/json")
    assert no_version.status_code == not_json.status_code == 400


def test_a_job_awaiting_review_can_be_remapped_and_returns_to_review(workspace, reviewer):
    job = admit(workspace, b"SKU,Description,Price\nA-1,Bolt,1.50\nA-2,Nut,0.20\n")
    run_until_idle()
    job.refresh_from_db()
    assert job.state == State.AWAITING_REVIEW  # no currency
    mapping = {
        "sheets": [
            {
                "sheet": "Sheet1",
                "header_row": 1,
                "columns": {"sku": "A", "description": "B", "unit_price": "C"},
            }
        ],
        "currency": "GBP",
    }
    assert post_mapping(bearer(reviewer), job, mapping).status_code == 202
    run_until_idle()
    job.refresh_from_db()
    assert job.state == State.AWAITING_REVIEW
    assert [i["currency"] for i in job.output["items"]] == ["GBP", "GBP"]


def test_a_cancelled_job_keeps_its_mapping_out_of_the_catalog(workspace, reviewer):
    job = refused_job(workspace)
    assert post_mapping(bearer(reviewer), job).status_code == 202
    job_cancel(job_id=job.pk)
    run_until_idle()
    assert Job.objects.get(pk=job.pk).state == State.CANCELLED
    assert not SupplierLayout.objects.exists()
