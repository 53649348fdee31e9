"""Uploaded sheets go through the `sheets` storage: a folder under
MEDIA_ROOT by default, an S3-compatible bucket by configuration. The S3
tests run against moto's server, started in this process on 127.0.0.1."""

import hashlib
import io
import subprocess

import boto3
import pytest
from moto.server import ThreadedMotoServer
from django.core.files.storage import storages
from django.test import Client

from accounts.services import apitoken_create
from catalog.models import CatalogItem, PriceSheet
from catalog.storage import UploadTooLarge, sheet_file_store, sheet_read_bytes
from jobs.models import Job, State
from tests.helpers import wait_for

CSV = b"SKU,Description,Unit,Price,Currency\nA-1,Bolt M8,piece,0.42,EUR\nA-2,Nut M8,piece,0.09,EUR\n"
BUCKET = "pricesheet-sheets"
# Credentials for the local server only; with them in the environment boto3
# looks nowhere else (no instance metadata, no config files of this machine).
S3_ENV = {
    "AWS_ACCESS_KEY_ID": "local-test-key",
    "AWS_SECRET_ACCESS_KEY": "local-test-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": "/dev/null",
    "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
}


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def s3_server(monkeypatch):
    """moto's server on 127.0.0.1 with one empty bucket; its endpoint URL.
    The server binds port 0 itself, so no other test's server can take the
    port between choosing it and listening on it."""
    for name, value in S3_ENV.items():
        monkeypatch.setenv(name, value)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=BUCKET)
        yield endpoint
    finally:
        server.stop()


@pytest.fixture
def s3_settings(settings, s3_server):
    settings.STORAGES = {
        **settings.STORAGES,
        "sheets": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": BUCKET,
                "endpoint_url": s3_server,
                "default_acl": None,
                "file_overwrite": True,
            },
        },
    }
    return {"SHEETS_STORAGE": "s3", "SHEETS_S3_BUCKET": BUCKET, "SHEETS_S3_ENDPOINT_URL": s3_server, **S3_ENV}


def _bucket_keys(endpoint: str) -> list[str]:
    listing = boto3.client("s3", endpoint_url=endpoint).list_objects_v2(Bucket=BUCKET)
    return sorted(obj["Key"] for obj in listing.get("Contents", []))


def test_by_default_a_sheet_is_stored_under_media_root_by_its_sha256(media):
    stored = sheet_file_store([CSV[:10], CSV[10:]])
    sha = hashlib.sha256(CSV).hexdigest()
    assert (stored.name, stored.sha256, stored.size) == (f"sheets/{sha}", sha, len(CSV))
    assert (media / "sheets" / sha).read_bytes() == CSV


def test_the_same_bytes_are_stored_once(media):
    first = sheet_file_store([CSV])
    second = sheet_file_store([CSV])
    assert first.name == second.name
    assert [p.name for p in (media / "sheets").iterdir()] == [first.sha256]


def test_a_cut_short_object_under_the_name_is_not_reused(media):
    sha = hashlib.sha256(CSV).hexdigest()
    (media / "sheets").mkdir(parents=True)
    (media / "sheets" / sha).write_bytes(CSV[:5])
    stored = sheet_file_store([CSV])
    assert stored.name != f"sheets/{sha}"
    with storages["sheets"].open(stored.name, "rb") as f:
        assert f.read() == CSV


def test_a_sheet_in_s3_is_stored_in_the_bucket_and_read_back(s3_settings, s3_server, media):
    stored = sheet_file_store([CSV])
    assert _bucket_keys(s3_server) == [f"sheets/{stored.sha256}"]
    assert not (media / "sheets").exists()
    assert sheet_read_bytes(stored.name) == CSV


@pytest.mark.processes
def test_an_upload_to_s3_is_read_by_a_worker_with_no_shared_disk(
    s3_settings, s3_server, member, processes, tmp_path
):
    token = apitoken_create(user=member)[1]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    upload = client.post(
        "/api/jobs", {"file": _named(CSV, "bolts.csv"), "supplier": "Bolts Ltd"}, HTTP_IDEMPOTENCY_KEY="s3-1"
    )
    assert upload.status_code == 202
    sheet = PriceSheet.objects.get()
    assert _bucket_keys(s3_server) == [sheet.storage_path]
    # The worker's MEDIA_ROOT is a folder of its own, empty: it can only
    # find the sheet in the bucket.
    worker_media = tmp_path / "worker-media"
    worker = processes.worker("s3-worker", "--burst", MEDIA_ROOT=worker_media, **s3_settings)
    job_id = upload.json()["id"]
    wait_for(
        lambda: Job.objects.get(pk=job_id).state == State.COMPLETED or worker.poll() is not None,
        timeout=60,
        message="the worker to finish the job",
    )
    assert Job.objects.get(pk=job_id).state == State.COMPLETED, processes.output(worker)
    assert sorted(CatalogItem.objects.values_list("sku", flat=True)) == ["A-1", "A-2"]
    assert not worker_media.exists()


def test_an_upload_past_the_limit_leaves_no_file_behind(media):
    with pytest.raises(UploadTooLarge):
        sheet_file_store([CSV, CSV], max_bytes=len(CSV) + 1)
    assert [p for p in media.rglob("*") if p.is_file()] == []


def _named(content: bytes, name: str):
    handle = io.BytesIO(content)
    handle.name = name
    return handle


@pytest.fixture
def full_disk(tmp_path, settings):
    """MEDIA_ROOT on a 64 KB tmpfs (needs the right to mount)."""
    folder = tmp_path / "tiny"
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here")
    settings.MEDIA_ROOT = folder
    yield folder
    subprocess.run(["umount", str(folder)], check=False)


def test_an_upload_that_fills_the_disk_answers_507_and_leaves_nothing_behind(member, full_disk):
    token = apitoken_create(user=member)[1]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    big = CSV + b"".join(f"S-{i},Item {i},kg,{i}.5,EUR\n".encode() for i in range(20_000))
    upload = client.post(
        "/api/jobs", {"file": _named(big, "big.csv"), "supplier": "Bolts Ltd"}, HTTP_IDEMPOTENCY_KEY="full-1"
    )
    assert upload.status_code == 507, upload.content
    assert upload["Retry-After"]
    assert upload.json()["type"] == "/problems/insufficient-storage"
    assert [p.name for p in full_disk.rglob("*") if p.is_file()] == []
    assert not PriceSheet.objects.exists()
    # Once there is room the same upload is stored whole.
    small = client.post(
        "/api/jobs",
        {"file": _named(CSV, "bolts.csv"), "supplier": "Bolts Ltd"},
        HTTP_IDEMPOTENCY_KEY="full-2",
    )
    assert small.status_code == 202
    sheet = PriceSheet.objects.get()
    assert (full_disk / sheet.storage_path).read_bytes() == CSV
