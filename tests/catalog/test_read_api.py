"""The catalog read API: suppliers, items, revisions (JSON, CSV, XLSX),
changes, ETags and 304s, workspace scoping, read-only tokens. Every answer
here is also validated against /api/openapi.json (tests/openapi_check.py)."""

import io
import uuid

import openpyxl
import pytest
from django.http import JsonResponse
from django.test import Client
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from accounts.models import ApiToken
from catalog.models import CatalogRevision, Supplier
from accounts.services import apitoken_create
from accounts.auth import authenticate
from jobs.models import Job, OutboxMessage
from jobs.problems import api_view
from jobs.worker import Worker
from tests.review import flagged_job, make_supplier, published_job, sheet_items

SHEET_1 = (
    "SKU,Description,Unit,Price,Currency\n"
    "A-1,Bolt M8,piece,0.42,EUR\n"
    "A-2,Nut M8,piece,0.09,EUR\n"
    "A-3,Washer M8,piece,0.05,EUR\n"
)
# A-1 repriced, A-2 unchanged, A-3 dropped, A-4 new.
SHEET_2 = (
    "SKU,Description,Unit,Price,Currency\n"
    "A-1,Bolt M8,piece,0.45,EUR\n"
    "A-2,Nut M8,piece,0.09,EUR\n"
    "A-4,Spring washer M8,piece,0.07,EUR\n"
)


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def bearer(user, scope=ApiToken.Scope.FULL) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {apitoken_create(user=user, scope=scope)[1]}")


@pytest.fixture
def reader(member) -> Client:
    return bearer(member, ApiToken.Scope.READ)


@pytest.fixture
def uploader(member) -> Client:
    return bearer(member)


def clean_items():
    return [{**item, "unit": "pcs"} for item in sheet_items("EUR")]


def publish(workspace, supplier, items) -> CatalogRevision:
    return CatalogRevision.objects.get(job=published_job(workspace, items=items, supplier=supplier))


def upload_and_publish(client: Client, content: str, key: str) -> Job:
    sheet = io.BytesIO(content.encode())
    sheet.name = "prices.csv"
    response = client.post(
        "/api/jobs", {"file": sheet, "supplier": "Acme Fasteners"}, HTTP_IDEMPOTENCY_KEY=key
    )
    assert response.status_code == 202
    assert Worker(worker_id="test").run_one()
    job = Job.objects.get(pk=response.json()["id"])
    assert job.state == "completed", job.reason
    return job


@pytest.fixture
def supplier(workspace) -> Supplier:
    return make_supplier(workspace, "Acme Fasteners")


@pytest.fixture
def revision(workspace, supplier) -> CatalogRevision:
    return publish(workspace, supplier, clean_items())


@pytest.fixture
def foreign(other_workspace) -> CatalogRevision:
    return publish(other_workspace, make_supplier(other_workspace, "Secret Supplier"), clean_items())


# --- the integration a read token runs --------------------------------------------


def test_a_read_token_keeps_a_downstream_copy_in_sync(uploader, reader, workspace):
    upload_and_publish(uploader, SHEET_1, "sheet-1")

    suppliers = reader.get("/api/suppliers").json()["results"]
    assert [(s["name"], s["item_count"]) for s in suppliers] == [("Acme Fasteners", 3)]
    supplier_id, first_revision = suppliers[0]["id"], suppliers[0]["current_revision_id"]

    items = reader.get(f"/api/suppliers/{supplier_id}/items")
    assert items.status_code == 200
    assert [(i["sku"], i["unit_price"]) for i in items.json()["results"]] == [
        ("A-1", "0.42"),
        ("A-2", "0.09"),
        ("A-3", "0.05"),
    ]
    again = reader.get(f"/api/suppliers/{supplier_id}/items", HTTP_IF_NONE_MATCH=items["ETag"])
    assert again.status_code == 304
    assert again.content == b""

    upload_and_publish(uploader, SHEET_2, "sheet-2")

    changes = reader.get(f"/api/suppliers/{supplier_id}/changes", {"since": first_revision}).json()
    assert changes["since"] == first_revision
    assert changes["revision_id"] != first_revision
    assert [i["sku"] for i in changes["added"]] == ["A-4"]
    assert [i["sku"] for i in changes["removed"]] == ["A-3"]
    assert [
        (c["sku"], c["old"]["unit_price"], c["new"]["unit_price"], c["fields"]) for c in changes["changed"]
    ] == [("A-1", "0.42", "0.45", ["unit_price"])]
    assert changes["unchanged"] == 1
    after = reader.get(f"/api/suppliers/{supplier_id}/items", HTTP_IF_NONE_MATCH=items["ETag"])
    assert after.status_code == 200  # the current revision moved: the old ETag no longer holds


def test_catalog_published_event_names_the_ids_changes_takes(uploader, reader, workspace):
    job = upload_and_publish(uploader, SHEET_1, "sheet-1")
    event = OutboxMessage.objects.get(topic="catalog.published")
    revision = CatalogRevision.objects.get(job=job)
    assert event.payload["revision_id"] == str(revision.public_id) == job.result["revision_id"]
    assert event.payload["supplier_id"] == str(revision.supplier.public_id)
    response = reader.get(
        f"/api/suppliers/{event.payload['supplier_id']}/changes", {"since": event.payload["revision_id"]}
    )
    assert response.json()["added"] == response.json()["removed"] == response.json()["changed"] == []


# --- read-only tokens -------------------------------------------------------------


MUTATIONS = [
    "/api/jobs",
    "/api/jobs/{job}/cancel",
    "/api/jobs/{job}/approve",
    "/api/jobs/{job}/reject",
    "/api/jobs/{job}/mapping",
]


@pytest.mark.parametrize("path", MUTATIONS)
def test_a_read_token_cannot_change_anything(reviewer, workspace, path):
    """A reviewer's read token: the refusal is the token's, not the role's."""
    reader = bearer(reviewer, ApiToken.Scope.READ)
    job = flagged_job(workspace)
    before = list(Job.objects.values_list("pk", "state", "version").order_by("pk"))
    response = reader.post(
        path.format(job=job.pk),
        {"version": job.version, "reason": "no"},
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY="k",
    )
    assert response.status_code == 403
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["type"] == "/problems/read-only-token"
    assert list(Job.objects.values_list("pk", "state", "version").order_by("pk")) == before


@csrf_exempt
@api_view
def _future_endpoint(request):
    authenticate(request)
    return JsonResponse({"changed": True})


urlpatterns = [path("future", _future_endpoint)]  # outside /api/: not in the document


@pytest.mark.urls(__name__)
def test_any_view_that_authenticates_refuses_a_read_token_on_unsafe_methods(reader):
    assert reader.get("/future").status_code == 200
    for method in ("post", "put", "patch", "delete"):
        assert getattr(reader, method)("/future").status_code == 403


def test_a_read_token_cannot_upload(reader, workspace):
    sheet = io.BytesIO(SHEET_1.encode())
    sheet.name = "prices.csv"
    response = reader.post("/api/jobs", {"file": sheet}, HTTP_IDEMPOTENCY_KEY="k")
    assert response.status_code == 403
    assert Job.objects.count() == 0


def test_a_read_token_reads_jobs(reader, workspace):
    job = published_job(workspace, items=clean_items())
    assert reader.get(f"/api/jobs/{job.pk}").json()["state"] == "completed"


def test_a_full_token_of_the_same_reviewer_does_mutate(reviewer, workspace):
    job = flagged_job(workspace)
    response = bearer(reviewer).post(
        f"/api/jobs/{job.pk}/reject",
        {"version": job.version, "reason": "wrong sheet"},
        content_type="application/json",
    )
    assert response.status_code == 200
    assert response.json()["state"] == "needs_attention"


def test_createapitoken_scope_read_makes_a_read_token(member):
    from django.core.management import call_command

    out = io.StringIO()
    call_command("createapitoken", member.username, "--scope", "read", stdout=out)
    token = out.getvalue().strip()
    assert ApiToken.objects.get(user=member).scope == ApiToken.Scope.READ
    response = Client(HTTP_AUTHORIZATION=f"Bearer {token}").post("/api/jobs")
    assert response.status_code == 403


# --- suppliers --------------------------------------------------------------------


def test_suppliers_list_is_paginated(reader, workspace, revision):
    make_supplier(workspace, "Beta Bolts")
    first = reader.get("/api/suppliers", {"page_size": 1}).json()
    second = reader.get(first["next"]).json()
    assert first["count"] == second["count"] == 2
    assert [s["name"] for s in first["results"] + second["results"]] == ["Acme Fasteners", "Beta Bolts"]
    assert second["next"] is None and second["previous"] is not None
    beta = second["results"][0]
    assert (beta["current_revision_id"], beta["item_count"]) == (None, 0)


def test_suppliers_list_shows_only_the_callers_workspaces(reader, revision, foreign):
    names = [s["name"] for s in reader.get("/api/suppliers").json()["results"]]
    assert names == ["Acme Fasteners"]


def test_supplier_answers_carry_public_ids_only(reader, supplier, revision):
    body = reader.get("/api/suppliers").json()["results"][0]
    assert body["id"] == str(supplier.public_id)
    assert body["current_revision_id"] == str(revision.public_id)
    # A path segment, not a substring: a small pk such as 67 may occur inside the public id's hex.
    assert str(supplier.pk) not in body["links"]["self"].split("/")
    assert str(supplier.public_id) in body["links"]["self"].split("/")


def test_another_workspaces_supplier_and_an_unknown_one_are_the_same_404(reader, foreign):
    answers = [
        reader.get(f"/api/suppliers/{sid}{tail}")
        for sid in (foreign.supplier.public_id, uuid.uuid4())
        for tail in ("", "/items", "/changes")
    ]
    assert {a.status_code for a in answers} == {404}
    assert len({a.content for a in answers[0::3]}) == 1
    assert answers[0].content == answers[3].content


def test_integer_ids_are_not_addresses(reader, supplier):
    assert reader.get(f"/api/suppliers/{supplier.pk}").status_code == 404


def test_supplier_items_filter_by_sku_and_text(reader, supplier, revision):
    url = f"/api/suppliers/{supplier.public_id}/items"
    all_skus = [i["sku"] for i in reader.get(url).json()["results"]]
    one = all_skus[0]
    assert [i["sku"] for i in reader.get(url, {"sku": one}).json()["results"]] == [one]
    described = reader.get(url, {"q": "bolt"}).json()["results"]
    assert described and all("bolt" in (i["sku"] + i["description"]).lower() for i in described)
    assert reader.get(url, {"sku": "no-such-sku"}).json()["count"] == 0


def test_supplier_items_of_an_older_revision(reader, workspace, supplier, revision):
    newer = publish(workspace, supplier, clean_items()[:1])
    url = f"/api/suppliers/{supplier.public_id}/items"
    assert reader.get(url).json()["revision_id"] == str(newer.public_id)
    older = reader.get(url, {"revision": str(revision.public_id)}).json()
    assert (older["revision_id"], older["count"]) == (str(revision.public_id), revision.item_count)


def test_supplier_items_revision_of_another_supplier_is_404(reader, workspace, supplier, revision, foreign):
    other = publish(workspace, make_supplier(workspace, "Beta Bolts"), clean_items())
    for revision_id in (other.public_id, foreign.public_id, uuid.uuid4()):
        response = reader.get(f"/api/suppliers/{supplier.public_id}/items", {"revision": str(revision_id)})
        assert response.status_code == 404


def test_bad_parameters_are_400_problems_naming_the_parameter(reader, supplier, revision):
    url = f"/api/suppliers/{supplier.public_id}/items"
    for params, name in (
        ({"page": "0"}, "page"),
        ({"page_size": "x"}, "page_size"),
        ({"revision": "not-an-id"}, "revision"),
    ):
        response = reader.get(url, params)
        assert response.status_code == 400
        assert response["Content-Type"] == "application/problem+json"
        assert f"`{name}`" in response.json()["detail"]


def test_a_page_size_past_the_stated_limit_is_a_400(reader, supplier, revision):
    base = f"/api/suppliers/{supplier.public_id}/items"
    refused = reader.get(base, {"page_size": "501"})
    assert refused.status_code == 400
    assert "`page_size`" in refused.json()["detail"]
    assert reader.get(base, {"page_size": "500"}).json()["count"] == revision.item_count


# --- revisions --------------------------------------------------------------------


def test_revision_detail(reader, supplier, revision):
    body = reader.get(f"/api/revisions/{revision.public_id}").json()
    assert body["id"] == str(revision.public_id)
    assert body["supplier_id"] == str(supplier.public_id)
    assert body["item_count"] == revision.item_count
    assert body["previous_revision_id"] is None


def test_revision_items_in_json(reader, revision):
    body = reader.get(f"/api/revisions/{revision.public_id}/items").json()
    assert body["count"] == revision.item_count
    assert set(body["results"][0]) == {
        "sku",
        "description",
        "unit",
        "unit_code",
        "pack_size",
        "unit_price",
        "currency",
        "source",
        "provenance",
    }


@pytest.mark.parametrize("how", [{"data": {"format": "csv"}}, {"HTTP_ACCEPT": "text/csv"}])
def test_revision_items_as_csv(reader, revision, how):
    response = reader.get(
        f"/api/revisions/{revision.public_id}/items",
        how.get("data"),
        **{k: v for k, v in how.items() if k != "data"},
    )
    assert response["Content-Type"].startswith("text/csv")
    lines = response.getvalue().decode("utf-8-sig").splitlines()
    assert lines[0].startswith("SKU,Description")
    assert len(lines) == revision.item_count + 1


def test_revision_as_xlsx_by_accept_header(reader, revision):
    xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    response = reader.get(f"/api/revisions/{revision.public_id}", HTTP_ACCEPT=xlsx)
    assert response["Content-Type"] == xlsx
    sheet = openpyxl.load_workbook(io.BytesIO(response.getvalue())).active
    assert sheet.max_row == revision.item_count + 1


def test_xlsx_bytes_and_etag_are_stable(reader, revision):
    url = f"/api/revisions/{revision.public_id}/items?format=xlsx"
    first, second = reader.get(url), reader.get(url)
    assert first.getvalue() == second.getvalue()
    assert first["ETag"] == second["ETag"]


def test_exports_are_formula_safe(reader, workspace, supplier):
    hostile = [{**clean_items()[0], "description": '=HYPERLINK("http://x")', "sku": "@SUM(A1)"}]
    revision = publish(workspace, supplier, hostile)
    csv_text = (
        reader.get(f"/api/revisions/{revision.public_id}/items?format=csv").getvalue().decode("utf-8-sig")
    )
    assert "'=HYPERLINK" in csv_text and "'@SUM(A1)" in csv_text
    xlsx = reader.get(f"/api/revisions/{revision.public_id}/items?format=xlsx").getvalue()
    # XLSX cells have types: the text is kept as written, stored as a string
    # (never evaluated), with no quote in front.
    cells = {c.value: c.data_type for c in openpyxl.load_workbook(io.BytesIO(xlsx)).active[2]}
    assert cells["@SUM(A1)"] == cells['=HYPERLINK("http://x")'] == "s"
    assert "f" not in cells.values()


def test_unacceptable_media_type_is_406(reader, revision):
    response = reader.get(f"/api/revisions/{revision.public_id}", HTTP_ACCEPT="application/pdf")
    assert response.status_code == 406
    assert response.json()["type"] == "/problems/not-acceptable"


def test_another_workspaces_revision_and_an_unknown_one_are_the_same_404(reader, foreign):
    for tail in ("", "/items", "/items?format=csv"):
        theirs = reader.get(f"/api/revisions/{foreign.public_id}{tail}")
        missing = reader.get(f"/api/revisions/{uuid.uuid4()}{tail}")
        assert theirs.status_code == missing.status_code == 404
        assert theirs.content == missing.content


# --- ETags, 304 and caching --------------------------------------------------------


@pytest.mark.parametrize(
    "tail", ["", "/items", "/items?format=csv", "/items?format=xlsx", "/items?sku=x&page=1"]
)
def test_revision_reads_answer_304_to_their_etag(reader, revision, tail):
    url = f"/api/revisions/{revision.public_id}{tail}"
    first = reader.get(url)
    assert first["ETag"].startswith('"') and not first["ETag"].startswith("W/")
    cached = reader.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert cached.status_code == 304
    assert cached["ETag"] == first["ETag"]
    assert reader.get(url, HTTP_IF_NONE_MATCH='"something-else"').status_code == 200


def test_etag_differs_between_representations(reader, revision):
    base = f"/api/revisions/{revision.public_id}/items"
    tags = {reader.get(base + query)["ETag"] for query in ("", "?format=csv", "?format=xlsx", "?page_size=1")}
    assert len(tags) == 4


def test_changes_answer_304_until_a_new_revision_is_published(reader, workspace, supplier, revision):
    url = f"/api/suppliers/{supplier.public_id}/changes?since={revision.public_id}"
    first = reader.get(url)
    assert reader.get(url, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    publish(workspace, supplier, clean_items()[:1])
    assert reader.get(url, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 200


def test_changes_without_since_list_every_current_item_as_added(reader, supplier, revision):
    body = reader.get(f"/api/suppliers/{supplier.public_id}/changes").json()
    assert body["since"] is None
    assert len(body["added"]) == revision.item_count
    assert body["removed"] == body["changed"] == []


def test_changes_since_another_suppliers_revision_is_404(reader, workspace, supplier, revision, foreign):
    other = publish(workspace, make_supplier(workspace, "Beta Bolts"), clean_items())
    for since in (other.public_id, foreign.public_id):
        response = reader.get(f"/api/suppliers/{supplier.public_id}/changes", {"since": str(since)})
        assert response.status_code == 404


def test_authenticated_answers_stay_out_of_shared_caches(reader, supplier, revision):
    for url in (
        "/api/suppliers",
        f"/api/revisions/{revision.public_id}",
        f"/api/suppliers/{supplier.public_id}/items",
        f"/api/revisions/{uuid.uuid4()}",
    ):
        assert reader.get(url)["Cache-Control"].startswith("private, no-")
    assert "Authorization" in reader.get(f"/api/revisions/{revision.public_id}")["Vary"]


def test_catalog_api_needs_credentials(client, supplier, revision):
    for url in ("/api/suppliers", f"/api/revisions/{revision.public_id}"):
        assert client.get(url).status_code == 401


def test_session_reads_the_catalog_too(client, member, revision):
    client.force_login(member)
    assert client.get(f"/api/revisions/{revision.public_id}").status_code == 200


def test_renaming_the_supplier_changes_the_revisions_etag(reader, supplier, revision):
    url = f"/api/revisions/{revision.public_id}"
    first = reader.get(url)
    Supplier.objects.filter(pk=supplier.pk).update(name="Acme Fasteners GmbH")
    again = reader.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 200
    assert again.json()["supplier_name"] == "Acme Fasteners GmbH"


def test_items_say_which_values_a_reviewer_set_and_which_were_extracted(client, workspace, reviewer):
    from tests.review import reviewed_revision

    revision = reviewed_revision(workspace, reviewer)
    answer = bearer(reviewer, ApiToken.Scope.READ).get(f"/api/revisions/{revision.public_id}/items")
    assert answer.status_code == 200
    nut = next(i for i in answer.json()["results"] if i["sku"] == "A-3")
    assert nut["provenance"]["unit"]["source"] == "reviewer"
    assert (nut["provenance"]["unit"]["by"], nut["provenance"]["unit"]["extracted"]) == ("rey", "u")
    assert nut["provenance"]["unit"]["at"]
    assert nut["provenance"]["currency"]["source"] == "reviewer"
    assert nut["provenance"]["sku"] == {"source": "extracted"}
    assert nut["provenance"]["unit_price"] == {"source": "extracted"}
