"""The HTTP API: admission, status, items, list, cancel and authorization,
one behaviour per test, against real PostgreSQL."""

import io
import json
import threading
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection, connections, transaction
from django.db.models.functions import Now
from django.core.handlers.base import BaseHandler
from django.core.handlers.wsgi import WSGIRequest
from django.test import Client
from django.test.utils import CaptureQueriesContext

from accounts.models import Membership
from catalog.models import CatalogItem, PriceSheet, Supplier
from accounts.services import apitoken_create, apitoken_revoke, membership_add, workspace_create
from catalog import api
from catalog.services import pricesheet_admit
from jobs.models import Job, OutboxMessage, State
from jobs.services import job_admit
from jobs.worker import Worker
from tests.helpers import comparable_headers, wait_for

DEMO = Path(__file__).resolve().parents[2] / "catalog" / "demo"
CSV = b"SKU,Description,Unit,Price,Currency\nA-1,Bolt M8,piece,0.42,EUR\nA-2,Nut M8,piece,0.09,EUR\n"
OTHER_CSV = b"SKU,Description,Unit,Price,Currency\nB-1,Washer M8,piece,0.05,EUR\n"
STATUS_KEYS = {
    "id",
    "state",
    "attempt",
    "max_attempts",
    "progress",
    "reason",
    "created_at",
    "updated_at",
    "timings",
    "result",
    "links",
    "columns",
    "layout",
}


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def token(member):
    return apitoken_create(user=member)[1]


@pytest.fixture
def api_client(token):
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


@pytest.fixture
def outsider_client(outsider):
    return Client(HTTP_AUTHORIZATION=f"Bearer {apitoken_create(user=outsider)[1]}")


def _file(content=CSV, name="prices.csv"):
    handle = io.BytesIO(content)
    handle.name = name
    return handle


def upload(client, content=CSV, *, key="key-1", supplier=None, name="prices.csv", **extra):
    data = {} if content is None else {"file": _file(content, name)}
    if supplier is not None:
        data["supplier"] = supplier
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    return client.post("/api/jobs", data, **headers, **extra)


def admitted_job(workspace, *, key="k", state=None, **changes):
    job, _ = job_admit(
        workspace_id=workspace.pk, kind="parse_sheet", payload={}, idempotency_key=key, fingerprint="f"
    )
    if state is not None or changes:
        Job.objects.filter(pk=job.pk).update(**({"state": state} if state else {}), **changes)
    return Job.objects.get(pk=job.pk)


# --- admission ------------------------------------------------------------------------


def test_status_url_is_the_reversed_url_under_any_script_prefix():
    from django.urls import reverse, set_script_prefix

    job_id = uuid.uuid4()
    for prefix in ("/", "/pricesheet/"):
        set_script_prefix(prefix)
        try:
            assert api.job_status_url(job_id) == reverse("api:job", args=[job_id])
        finally:
            set_script_prefix("/")
    assert api.job_status_url(job_id) == f"/api/jobs/{job_id}"


@pytest.mark.parametrize(
    "viewname",
    ["api:job", "api:job-cancel", "api:job-items", "api:job-mapping", "jobs:detail", "review:detail"],
)
def test_status_links_are_the_reversed_urls_under_any_script_prefix(viewname):
    from django.urls import reverse, set_script_prefix

    from jobs.selectors import job_url

    job_id = uuid.uuid4()
    for prefix in ("/", "/pricesheet/"):
        set_script_prefix(prefix)
        try:
            assert job_url(viewname, job_id) == reverse(viewname, args=[job_id])
        finally:
            set_script_prefix("/")
    assert job_url(viewname, job_id).startswith("/")


def test_admission_answers_202_with_location_and_status_url(api_client):
    response = upload(api_client)
    assert response.status_code == 202
    body = response.json()
    assert body["state"] == "queued"
    assert body["status_url"] == f"/api/jobs/{body['id']}"
    assert response["Location"] == body["status_url"]


def test_admission_creates_a_queued_parse_sheet_job_and_its_outbox_message(api_client, workspace):
    body = upload(api_client, supplier="Northwind").json()
    job = Job.objects.get(pk=body["id"])
    sheet = PriceSheet.objects.get(pk=job.payload["sheet_id"])
    assert (job.kind, job.state, job.workspace_id) == ("parse_sheet", State.QUEUED, workspace.pk)
    # The supplier is created when a revision is first published for it.
    assert job.payload["supplier_name"] == sheet.supplier_name == "Northwind"
    assert job.payload["supplier_id"] is None
    assert OutboxMessage.objects.filter(topic="job.accepted", payload__job_id=body["id"]).exists()


def test_admission_statements_are_prepared_and_logged_with_their_text(api_client):
    # The first upload prepares them on this connection, the second runs them prepared.
    assert upload(api_client, key="prepare-1").status_code == 202
    with CaptureQueriesContext(connection) as captured:
        assert upload(api_client, CSV + b"P-2,Pear,kg,2.00,EUR\n", key="prepare-2").status_code == 202
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [" ".join(row[0].split()) for row in cursor.fetchall()]
    assert any(statement.startswith('WITH job AS (INSERT INTO "jobs_job"') for statement in prepared)
    assert any(statement.startswith("WITH mine AS") for statement in prepared)  # the upload target
    assert all(query["sql"] for query in captured.captured_queries)
    # Only while those run: psycopg would otherwise count every other
    # statement by its text, keeping the large ones in memory.
    assert connection.connection.prepare_threshold is None
    assert any('INSERT INTO "jobs_job"' in query["sql"] for query in captured.captured_queries)


def test_admission_stores_the_sheet_under_its_sha256(api_client, media):
    import hashlib

    body = upload(api_client).json()
    sheet = PriceSheet.objects.get(pk=Job.objects.get(pk=body["id"]).payload["sheet_id"])
    assert sheet.sha256 == hashlib.sha256(CSV).hexdigest()
    assert (Path(media) / "sheets" / sheet.sha256).read_bytes() == CSV


def test_admission_reads_and_writes_in_three_statements_before_the_wake_up(api_client, workspace):
    upload(api_client, key="warm-up")  # the token's last use is recorded at most once a minute
    with CaptureQueriesContext(connection) as captured:
        assert upload(api_client, key="counted").status_code == 202
    # The token with its user; the workspace, replay, rate window and supplier;
    # the sheet, job and message. The wake-up follows the commit, which this
    # test's transaction never reaches.
    assert len(captured.captured_queries) == 3


def test_admission_names_the_existing_supplier_whatever_its_case_and_spaces(api_client, workspace):
    supplier = Supplier.objects.create(workspace=workspace, name="Northwind Ltd")
    response = upload(api_client, supplier="  northwind   LTD ")
    job = Job.objects.get(pk=response.json()["id"])
    assert job.payload["supplier_id"] == supplier.pk
    assert PriceSheet.objects.get(pk=job.payload["sheet_id"]).supplier_id == supplier.pk


def test_jobs_older_than_a_minute_leave_the_upload_rate_window(api_client, workspace, settings):
    settings.UPLOAD_RATE_PER_MINUTE = 1
    assert upload(api_client, key="first").status_code == 202
    assert upload(api_client, key="second").status_code == 429
    Job.objects.update(created_at=Now() - timedelta(seconds=61))
    assert upload(api_client, key="second").status_code == 202


def test_admission_without_idempotency_key_is_400(api_client):
    response = upload(api_client, key=None)
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["type"] == "/problems/idempotency-key-required"
    assert not Job.objects.exists()


def test_admission_without_file_is_400(api_client):
    response = upload(api_client, content=None)
    assert response.status_code == 400
    assert response.json()["type"] == "/problems/invalid-request"


def test_admission_of_an_empty_file_is_400(api_client):
    response = upload(api_client, content=b"")
    assert response.status_code == 400
    assert response.json()["type"] == "/problems/empty-file"
    assert not Job.objects.exists()


def test_same_key_same_request_returns_the_same_job(api_client):
    first = upload(api_client, key="same", supplier="Northwind")
    second = upload(api_client, key="same", supplier="Northwind")
    assert (first.status_code, second.status_code) == (202, 202)
    assert second.json() == first.json()
    assert second["Location"] == first["Location"]
    assert second["Idempotent-Replayed"] == "true"
    assert Job.objects.count() == 1


def test_replayed_admission_leaves_no_second_sheet_row(api_client):
    upload(api_client, key="same")
    upload(api_client, key="same")
    assert PriceSheet.objects.count() == 1


def test_same_key_other_file_is_422(api_client):
    upload(api_client, key="same")
    response = upload(api_client, OTHER_CSV, key="same")
    assert response.status_code == 422
    assert response.json()["type"] == "/problems/idempotency-key-reused"
    assert Job.objects.count() == 1
    assert PriceSheet.objects.count() == 1


def test_same_key_other_supplier_is_422(api_client):
    upload(api_client, key="same", supplier="Northwind")
    response = upload(api_client, key="same", supplier="Southwind")
    assert response.status_code == 422


def test_same_bytes_with_two_keys_make_two_jobs(api_client):
    first = upload(api_client, key="one").json()
    second = upload(api_client, key="two").json()
    assert first["id"] != second["id"]


def test_idempotency_keys_are_scoped_to_the_workspace(api_client, outsider_client):
    mine = upload(api_client, key="shared").json()
    theirs = upload(outsider_client, key="shared").json()
    assert mine["id"] != theirs["id"]


def test_upload_past_the_limit_is_413_and_stores_nothing(api_client, settings):
    settings.UPLOAD_MAX_BYTES = 1000
    response = upload(api_client, b"x" * 1001)
    assert response.status_code == 413
    assert response.json()["type"] == "/problems/upload-too-large"
    assert not PriceSheet.objects.exists()
    assert not Job.objects.exists()


def test_upload_at_the_limit_is_accepted(api_client, settings):
    settings.UPLOAD_MAX_BYTES = len(CSV)
    assert upload(api_client).status_code == 202


class CountingInput(io.BytesIO):
    """A request body that remembers how many bytes the server read."""

    def __init__(self, data: bytes):
        super().__init__(data)
        self.bytes_read = 0

    def read(self, size=-1):
        chunk = super().read(size)
        self.bytes_read += len(chunk)
        return chunk

    def readline(self, size=-1):
        line = super().readline(size)
        self.bytes_read += len(line)
        return line


def _raw_upload_request(token: str, file_bytes: bytes):
    """A multipart upload whose body is a CountingInput, as a WSGI server hands it over."""
    boundary = "BoUnDaRy"
    payload = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
        f'filename="big.csv"\r\nContent-Type: text/csv\r\n\r\n'
    ).encode()
    payload += file_bytes + f"\r\n--{boundary}--\r\n".encode()
    stream = CountingInput(payload)
    request = WSGIRequest(
        {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": "/api/jobs",
            "SERVER_NAME": "testserver",
            "SERVER_PORT": "80",
            "wsgi.url_scheme": "http",
            "wsgi.input": stream,
            "CONTENT_TYPE": f"multipart/form-data; boundary={boundary}",
            "CONTENT_LENGTH": str(len(payload)),
            "HTTP_AUTHORIZATION": f"Bearer {token}",
            "HTTP_IDEMPOTENCY_KEY": "big",
        }
    )
    return request, stream


def _serve(request):
    """The request through the whole middleware stack and URLconf, as the server runs it."""
    handler = BaseHandler()
    handler.load_middleware()
    return handler.get_response(request)


def test_declared_oversize_is_refused_before_the_body_is_read(token, settings):
    settings.UPLOAD_MAX_BYTES = 1000
    request, stream = _raw_upload_request(token, b"x" * 500_000)
    response = _serve(request)
    assert response.status_code == 413
    assert stream.bytes_read == 0


def test_streaming_limit_stops_reading_one_chunk_past_the_limit(token, settings, monkeypatch):
    settings.UPLOAD_MAX_BYTES = 1000
    # Let the Content-Length check through, as a lying length would.
    monkeypatch.setattr(api, "MULTIPART_ALLOWANCE_BYTES", 10 * 1024 * 1024)
    request, stream = _raw_upload_request(token, b"x" * 2_000_000)
    response = _serve(request)
    assert response.status_code == 413
    assert stream.bytes_read <= 1000 + 2 * api.UploadLimitHandler.chunk_size
    assert not PriceSheet.objects.exists()


def test_upload_without_content_length_is_411(token):
    request, stream = _raw_upload_request(token, CSV)
    del request.META["CONTENT_LENGTH"]
    response = _serve(request)
    assert response.status_code == 411
    assert json.loads(response.content)["type"] == "/problems/length-required"
    assert stream.bytes_read == 0


@pytest.mark.django_db(transaction=True)
def test_concurrent_same_key_waits_on_the_unique_constraint_and_returns_one_job(member, workspace, token):
    """Connection A inserts the job for key K and holds its transaction open;
    connection B's request with K blocks on the unique index, and once A
    commits, B answers with A's job."""
    a_inserted, a_may_commit = threading.Event(), threading.Event()
    result: dict = {}

    def connection_a():
        try:
            with transaction.atomic():
                job, _ = pricesheet_admit(
                    workspace=workspace,
                    chunks=[CSV],
                    original_name="prices.csv",
                    content_type="text/csv",
                    supplier_name="",
                    idempotency_key="K",
                    user=member,
                )
                result["a"] = str(job.pk)
                a_inserted.set()
                a_may_commit.wait(20)
        finally:
            connections.close_all()

    def connection_b():
        try:
            response = upload(Client(HTTP_AUTHORIZATION=f"Bearer {token}"), key="K")
            result["b"] = (response.status_code, response.json())
        finally:
            connections.close_all()

    thread_a = threading.Thread(target=connection_a)
    thread_a.start()
    assert a_inserted.wait(20)
    thread_b = threading.Thread(target=connection_b)
    thread_b.start()

    def b_is_waiting_on_a_lock():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND wait_event_type = 'Lock' AND query LIKE '%%INSERT INTO \"jobs_job\"%%'"
            )
            return cursor.fetchone()[0] == 1

    wait_for(b_is_waiting_on_a_lock, message="the second INSERT to wait on the first")
    a_may_commit.set()
    thread_a.join(20)
    thread_b.join(20)
    status, body = result["b"]
    assert status == 202
    assert body["id"] == result["a"]
    assert Job.objects.count() == 1
    assert PriceSheet.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_simultaneous_same_key_requests_create_one_job(member, workspace, token):
    barrier = threading.Barrier(2)
    answers: list = []

    def post():
        try:
            client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
            barrier.wait(10)
            response = upload(client, key="race")
            answers.append((response.status_code, response.json()["id"]))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=post) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert [status for status, _ in answers] == [202, 202]
    assert answers[0][1] == answers[1][1]
    assert Job.objects.count() == 1


def test_admission_to_another_workspace_is_the_404_of_an_unknown_one(api_client, other_workspace):
    theirs = api_client.post(
        "/api/jobs", {"file": _file(), "workspace": other_workspace.slug}, HTTP_IDEMPOTENCY_KEY="k"
    )
    unknown = api_client.post(
        "/api/jobs", {"file": _file(), "workspace": "nobody"}, HTTP_IDEMPOTENCY_KEY="k2"
    )
    assert theirs.status_code == unknown.status_code == 404
    assert not Job.objects.exists()


def test_member_of_several_workspaces_must_name_one(api_client, member):
    second = workspace_create(slug="second")
    membership_add(workspace=second, username=member.username, role=Membership.Role.MEMBER)
    response = upload(api_client)
    assert response.status_code == 400
    assert response.json()["type"] == "/problems/workspace-required"
    named = api_client.post("/api/jobs", {"file": _file(), "workspace": "second"}, HTTP_IDEMPOTENCY_KEY="k2")
    assert named.status_code == 202
    assert Job.objects.get(pk=named.json()["id"]).workspace_id == second.pk


# --- authentication and CSRF -----------------------------------------------------------------


# A fixed id: pytest-xdist's processes must collect the same test names.
@pytest.mark.parametrize(
    "method,path", [("get", "/api/jobs"), ("post", "/api/jobs"), ("get", f"/api/jobs/{uuid.UUID(int=1)}")]
)
def test_no_credentials_is_401_problem(client, db, method, path):
    response = getattr(client, method)(path)
    assert response.status_code == 401
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["type"] == "/problems/not-authenticated"
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_unknown_bearer_token_is_401(db, member):
    response = Client(HTTP_AUTHORIZATION="Bearer psk_nope").get("/api/jobs")
    assert response.status_code == 401
    assert response.json()["type"] == "/problems/invalid-token"


def test_revoked_token_is_401(member):
    row, token = apitoken_create(user=member)
    apitoken_revoke(token_id=row.pk)
    assert Client(HTTP_AUTHORIZATION=f"Bearer {token}").get("/api/jobs").status_code == 401


def test_bad_token_does_not_fall_back_to_the_session(member, client):
    client.force_login(member)
    assert client.get("/api/jobs", HTTP_AUTHORIZATION="Bearer psk_nope").status_code == 401


def test_session_reads_status(member, workspace):
    job = admitted_job(workspace)
    client = Client()
    client.force_login(member)
    assert client.get(f"/api/jobs/{job.pk}").status_code == 200


def test_session_upload_without_csrf_token_is_403_problem(member):
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    response = upload(client)
    assert response.status_code == 403
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["type"] == "/problems/csrf-failed"
    assert not Job.objects.exists()


def test_session_cancel_without_csrf_token_is_403_problem(member, workspace):
    job = admitted_job(workspace)
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    response = client.post(f"/api/jobs/{job.pk}/cancel")
    assert response.status_code == 403
    assert Job.objects.get(pk=job.pk).state == State.QUEUED


def test_session_upload_with_csrf_token_is_accepted(member):
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    client.get("/jobs/new")  # sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    response = upload(client, HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 202


def test_bearer_token_needs_no_csrf_token(token):
    client = Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert upload(client).status_code == 202


# --- status ----------------------------------------------------------------------------------


def test_status_has_the_contract_shape(api_client, workspace):
    job = admitted_job(workspace)
    response = api_client.get(f"/api/jobs/{job.pk}")
    body = response.json()
    assert response.status_code == 200
    assert set(body) == STATUS_KEYS
    assert body["progress"] == {"done": 0, "total": 0}
    assert set(body["timings"]) == {"waiting_seconds", "running_seconds", "review_seconds"}
    assert body["result"] is None
    assert body["links"] == {
        "self": f"/api/jobs/{job.pk}",
        "items": f"/api/jobs/{job.pk}/items",
        "cancel": f"/api/jobs/{job.pk}/cancel",
        "page": f"/jobs/{job.pk}/",
    }


def test_status_timings_include_the_live_portion_of_the_current_state(api_client, workspace):
    job = admitted_job(workspace, state_changed_at=Now() - timedelta(seconds=90), waiting_seconds=10)
    timings = api_client.get(f"/api/jobs/{job.pk}").json()["timings"]
    assert 100 <= timings["waiting_seconds"] < 110
    assert timings["running_seconds"] == 0


def test_status_of_a_job_awaiting_review_links_the_review(api_client, workspace):
    job = admitted_job(
        workspace,
        state=State.AWAITING_REVIEW,
        state_changed_at=Now() - timedelta(seconds=30),
        running_seconds=2,
    )
    body = api_client.get(f"/api/jobs/{job.pk}").json()
    assert body["links"]["review"] == f"/review/{job.pk}/"
    assert body["timings"]["review_seconds"] >= 30
    assert body["timings"]["running_seconds"] == 2


def test_status_shows_the_result_of_a_completed_job(api_client, workspace):
    job = admitted_job(
        workspace,
        state=State.COMPLETED,
        finished_at=Now(),
        result={"revision_id": "0b6f8c1e-7d0a-4c55-9a55-2f1f0c7e9d11", "item_count": 3},
    )
    body = api_client.get(f"/api/jobs/{job.pk}").json()
    assert body["result"] == {"revision_id": "0b6f8c1e-7d0a-4c55-9a55-2f1f0c7e9d11", "item_count": 3}
    assert body["state"] == "completed"


def test_status_reads_the_job_and_its_reading_report_in_one_statement(api_client, workspace):
    job = admitted_job(workspace)
    api_client.get(f"/api/jobs/{job.pk}")  # the token's last use is recorded at most once a minute
    with CaptureQueriesContext(connection) as captured:
        assert api_client.get(f"/api/jobs/{job.pk}").status_code == 200
    # The token with its user; the job with its live phase, columns and layout.
    assert len(captured.captured_queries) == 2


def test_status_etag_carries_the_version(api_client, workspace):
    job = admitted_job(workspace)
    assert api_client.get(f"/api/jobs/{job.pk}")["ETag"] == f'"{job.version}"'


# --- authorization: another workspace's job is a job that does not exist --------------------


@pytest.mark.parametrize("method,suffix", [("get", ""), ("get", "/items"), ("post", "/cancel")])
def test_other_workspace_job_and_unknown_id_give_identical_404(outsider_client, workspace, method, suffix):
    job = admitted_job(workspace)
    theirs = getattr(outsider_client, method)(f"/api/jobs/{job.pk}{suffix}")
    unknown = getattr(outsider_client, method)(f"/api/jobs/{uuid.uuid4()}{suffix}")
    assert theirs.status_code == unknown.status_code == 404
    assert theirs.content == unknown.content
    assert comparable_headers(theirs) == comparable_headers(unknown)
    assert theirs.json()["type"] == "/problems/not-found"
    assert Job.objects.get(pk=job.pk).state == State.QUEUED


def test_list_shows_only_the_callers_workspaces(api_client, workspace, other_workspace):
    mine = admitted_job(workspace, key="a")
    admitted_job(other_workspace, key="b")
    body = api_client.get("/api/jobs").json()
    assert [row["id"] for row in body["results"]] == [str(mine.pk)]
    assert body["count"] == 1


# --- the list ---------------------------------------------------------------------------------


def test_list_filters_by_state(api_client, workspace):
    admitted_job(workspace, key="a")
    done = admitted_job(workspace, key="b", state=State.CANCELLED, finished_at=Now())
    body = api_client.get("/api/jobs?state=cancelled").json()
    assert [row["id"] for row in body["results"]] == [str(done.pk)]


def test_list_with_unknown_state_is_400(api_client):
    response = api_client.get("/api/jobs?state=exploded")
    assert response.status_code == 400
    assert response.json()["type"] == "/problems/invalid-request"


def test_list_paginates_newest_first(api_client, workspace):
    jobs = [admitted_job(workspace, key=f"k{i}") for i in range(3)]
    first = api_client.get("/api/jobs?page_size=2").json()
    second = api_client.get(first["next"]).json()
    assert first["count"] == 3
    assert [r["id"] for r in first["results"] + second["results"]] == [str(j.pk) for j in reversed(jobs)]
    assert first["previous"] is None and second["next"] is None
    assert second["previous"] is not None


def test_list_page_size_above_100_is_a_400_naming_the_limit(api_client, workspace):
    Job.objects.bulk_create(Job(workspace=workspace, kind="noop", max_attempts=1) for _ in range(105))
    refused = api_client.get("/api/jobs?page_size=101")
    body = api_client.get("/api/jobs?page_size=100").json()
    assert refused.status_code == 400
    assert "`page_size`" in refused.json()["detail"] and "100" in refused.json()["detail"]
    assert len(body["results"]) == 100
    assert "page_size=100" in body["next"]


def test_list_with_bad_page_is_400(api_client):
    assert api_client.get("/api/jobs?page=zero").status_code == 400


# --- items ------------------------------------------------------------------------------------


def test_items_of_staged_output_carry_their_flags(api_client, workspace):
    item = {
        "sku": "A-1",
        "description": "Bolt",
        "unit": "piece",
        "pack_size": None,
        "unit_price": "0.42",
        "currency": None,
        "source": {"sheet": "Sheet1", "row": 2},
        "flags": [{"code": "missing_currency", "field": "currency", "message": "set it"}],
    }
    job = admitted_job(workspace, state=State.AWAITING_REVIEW, output={"items": [item]})
    assert api_client.get(f"/api/jobs/{job.pk}/items").json() == {
        "items": [item],
        "count": 1,
        "next": None,
        "previous": None,
    }


def test_items_before_any_output_are_empty(api_client, workspace):
    job = admitted_job(workspace)
    assert api_client.get(f"/api/jobs/{job.pk}/items").json() == {
        "items": [],
        "count": 0,
        "next": None,
        "previous": None,
    }


def numbered_items(count):
    return [
        {
            "sku": f"S-{n}",
            "description": "Bolt",
            "unit": None,
            "pack_size": None,
            "unit_price": "1.00",
            "currency": "EUR",
            "source": {"sheet": "Sheet1", "row": n + 2},
            "flags": [],
        }
        for n in range(count)
    ]


def test_items_come_a_page_at_a_time_in_the_outputs_order(api_client, workspace):
    job = admitted_job(workspace, state=State.AWAITING_REVIEW, output={"items": numbered_items(1203)})
    first = api_client.get(f"/api/jobs/{job.pk}/items").json()
    # The default page holds a small sheet whole; a large one has a next page.
    assert (first["count"], len(first["items"]), first["previous"]) == (1203, api.ITEMS_PAGE_SIZE, None)
    assert first["items"][0]["sku"] == "S-0"
    last = api_client.get(f"/api/jobs/{job.pk}/items?page=3").json()
    assert [i["sku"] for i in last["items"]] == [f"S-{n}" for n in range(1000, 1203)]
    assert last["next"] is None and "page=2" in last["previous"]
    middle = api_client.get(first["next"]).json()
    assert middle["items"][0]["sku"] == "S-500" and middle["items"][-1]["sku"] == "S-999"
    assert (
        api_client.get(f"/api/jobs/{job.pk}/items?page=2&page_size=1200").json()["items"]
        == (numbered_items(1203)[1200:])
    )


def test_item_pages_are_bounded_and_a_page_past_the_last_is_a_404(api_client, workspace):
    job = admitted_job(workspace, state=State.AWAITING_REVIEW, output={"items": numbered_items(3)})
    too_large = api_client.get(f"/api/jobs/{job.pk}/items?page_size={api.ITEMS_PAGE_SIZE_MAX + 1}")
    assert too_large.status_code == 400 and "page_size" in too_large.content.decode()
    past = api_client.get(f"/api/jobs/{job.pk}/items?page=2")
    assert past.status_code == 404 and past.json()["last_page"] == 1


# --- cancel -----------------------------------------------------------------------------------


def test_cancel_a_queued_job_answers_200_with_the_new_state(api_client, workspace):
    job = admitted_job(workspace)
    response = api_client.post(f"/api/jobs/{job.pk}/cancel")
    assert response.status_code == 200
    assert response.json() == {"id": str(job.pk), "state": "cancelled", "version": job.version + 1}
    assert Job.objects.get(pk=job.pk).state == State.CANCELLED


def test_cancel_a_completed_job_is_409(api_client, workspace):
    job = admitted_job(workspace, state=State.COMPLETED, finished_at=Now())
    response = api_client.post(f"/api/jobs/{job.pk}/cancel")
    assert response.status_code == 409
    assert response.json()["type"] == "/problems/not-cancellable"
    assert response.json()["state"] == "completed"


def test_cancel_naming_a_stale_version_is_409_with_the_current_state(api_client, workspace):
    job = admitted_job(workspace)
    response = api_client.post(
        f"/api/jobs/{job.pk}/cancel", {"version": job.version + 5}, content_type="application/json"
    )
    assert response.status_code == 409
    assert response.json()["type"] == "/problems/version-conflict"
    assert (response.json()["state"], response.json()["version"]) == ("queued", job.version)
    assert Job.objects.get(pk=job.pk).state == State.QUEUED


def test_cancel_naming_the_current_version_succeeds(api_client, workspace):
    job = admitted_job(workspace)
    response = api_client.post(f"/api/jobs/{job.pk}/cancel", HTTP_IF_MATCH=f'"{job.version}"')
    assert response.status_code == 200


# --- errors are problems ------------------------------------------------------------------------


def test_unexpected_error_is_a_500_problem_without_a_stack_trace(api_client, workspace, monkeypatch):
    job = admitted_job(workspace)

    def explode(job):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(api, "job_status", explode)
    response = api_client.get(f"/api/jobs/{job.pk}")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["type"] == "/problems/internal-error"
    assert b"secret internals" not in response.content
    assert b"Traceback" not in response.content


def test_unknown_api_path_is_a_404_problem(api_client):
    response = api_client.get("/api/nothing/here")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"


def test_wrong_method_is_a_405_problem(api_client, workspace):
    job = admitted_job(workspace)
    response = api_client.get(f"/api/jobs/{job.pk}/cancel")
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert response.json()["type"] == "/problems/method-not-allowed"


# --- end to end with the worker ------------------------------------------------------------


def test_admitted_demo_sheet_is_published_by_a_worker(api_client):
    content = (DEMO / "demo-clean.csv").read_bytes()
    job_id = upload(api_client, content, supplier="Demo Hardware", name="demo-clean.csv").json()["id"]
    assert Worker(worker_id="test").run_one()
    status = api_client.get(f"/api/jobs/{job_id}").json()
    items = api_client.get(f"/api/jobs/{job_id}/items").json()["items"]
    assert status["state"] == "completed"
    assert status["result"]["item_count"] == len(items) == 12
    assert CatalogItem.objects.filter(revision__public_id=status["result"]["revision_id"]).count() == 12
    assert all(item["flags"] == [] for item in items)


def test_demo_sheet_without_currency_waits_for_review(api_client):
    content = (DEMO / "demo-needs-review.csv").read_bytes()
    job_id = upload(api_client, content, name="demo-needs-review.csv").json()["id"]
    assert Worker(worker_id="test").run_one()
    status = api_client.get(f"/api/jobs/{job_id}").json()
    items = api_client.get(f"/api/jobs/{job_id}/items").json()["items"]
    assert status["state"] == "awaiting_review"
    assert status["links"]["review"] == f"/review/{job_id}/"
    # The missing currency sends it to review; the column model's doubts are shown there too.
    assert all("missing_currency" in {flag["code"] for flag in item["flags"]} for item in items)
    assert {flag["code"] for item in items for flag in item["flags"]} <= {
        "missing_currency",
        "uncertain_column",
    }
