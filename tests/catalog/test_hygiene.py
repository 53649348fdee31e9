"""Catalog hygiene: suppliers exist only once something was published for
them, an identical sheet publishes nothing new, diffs stay within one
supplier, and the pages link where a reader expects it."""

import pytest
from django.test import Client

from catalog.models import CatalogRevision, Supplier
from catalog.services import pricesheet_admit
from catalog.storage import UploadTooLarge
from jobs.models import Job, State
from jobs.worker import Worker

CSV = b"SKU,Description,Unit,Price,Currency\nA-1,Bolt M8,piece,0.42,EUR\nA-2,Nut M8,piece,0.10,EUR\n"
CSV_CHANGED = CSV.replace(b"0.42", b"0.45")
PDF = b"%PDF-1.7\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def upload(
    workspace, user, data: bytes, *, key: str, supplier: str = "Northwind", name: str = "prices.csv"
) -> Job:
    job, _ = pricesheet_admit(
        workspace=workspace,
        chunks=[data],
        original_name=name,
        content_type="text/csv",
        supplier_name=supplier,
        idempotency_key=key,
        user=user,
    )
    return job


def run_jobs() -> None:
    worker = Worker(worker_id="test")
    while worker.run_one():
        pass


def test_a_refused_sheet_creates_no_supplier(workspace, member):
    job = upload(workspace, member, PDF, key="pdf", name="prices.pdf")
    run_jobs()

    assert Job.objects.get(pk=job.pk).state == State.NEEDS_ATTENTION
    assert not Supplier.objects.exists()


def test_an_upload_refused_at_admission_creates_no_supplier(workspace, member, settings):
    settings.UPLOAD_MAX_BYTES = 10
    with pytest.raises(UploadTooLarge):
        upload(workspace, member, CSV, key="big")
    assert not Supplier.objects.exists()


def test_the_first_publication_creates_the_supplier(workspace, member):
    job = upload(workspace, member, CSV, key="first")
    assert not Supplier.objects.exists()  # not yet: nothing is published

    run_jobs()

    supplier = Supplier.objects.get(workspace=workspace, name="Northwind")
    revision = CatalogRevision.objects.get(job=job)
    assert supplier.current_revision_id == revision.pk
    assert revision.supplier_id == supplier.pk


def test_an_identical_sheet_publishes_no_new_revision_and_says_unchanged(workspace, member):
    first = upload(workspace, member, CSV, key="one")
    run_jobs()
    second = upload(workspace, member, CSV, key="two")
    run_jobs()

    second.refresh_from_db()
    revision = CatalogRevision.objects.get()
    assert revision.job_id == first.pk
    assert second.state == State.COMPLETED
    assert second.result["unchanged"] is True
    assert second.result["revision_id"] == str(revision.public_id)
    assert "identical to catalog revision" in second.result["note"]

    client = Client()
    client.force_login(member)
    status = client.get(f"/api/jobs/{second.pk}").json()
    assert status["result"]["unchanged"] is True
    assert status["result"]["revision_id"] == str(revision.public_id)
    page = client.get(f"/jobs/{second.pk}/").content.decode()
    assert "Unchanged:" in page and f'href="/catalog/revisions/{revision.public_id}/"' in page


def test_a_changed_sheet_publishes_a_new_revision(workspace, member):
    upload(workspace, member, CSV, key="one")
    run_jobs()
    second = upload(workspace, member, CSV_CHANGED, key="two")
    run_jobs()

    second.refresh_from_db()
    assert CatalogRevision.objects.count() == 2
    assert "unchanged" not in second.result
    assert Supplier.objects.get().current_revision.job_id == second.pk


def test_the_same_file_for_another_supplier_is_published_for_it(workspace, member):
    upload(workspace, member, CSV, key="one", supplier="Northwind")
    upload(workspace, member, CSV, key="two", supplier="Southwind")
    run_jobs()
    assert CatalogRevision.objects.count() == 2


def test_the_diff_refuses_revisions_of_different_suppliers(workspace, member):
    upload(workspace, member, CSV, key="one", supplier="Northwind")
    upload(workspace, member, CSV_CHANGED, key="two", supplier="Southwind")
    run_jobs()
    north, south = (CatalogRevision.objects.get(supplier__name=name) for name in ("Northwind", "Southwind"))
    client = Client()
    client.force_login(member)

    response = client.get(f"/catalog/diff/?old={north.public_id}&new={south.public_id}")

    assert response.status_code == 400
    assert "belong to different suppliers (Northwind and Southwind)" in response.content.decode()


def test_the_job_page_links_its_catalog_revision(workspace, member):
    job = upload(workspace, member, CSV, key="one")
    run_jobs()
    revision = CatalogRevision.objects.get(job=job)
    client = Client()
    client.force_login(member)

    page = client.get(f"/jobs/{job.pk}/").content.decode()

    assert (
        f'<a href="/catalog/revisions/{revision.public_id}/" id="job-revision">Revision 1 of Northwind</a>'
        in page
    )


def test_the_state_filter_shows_readable_labels_and_keeps_the_choice(workspace, member):
    client = Client()
    client.force_login(member)

    page = client.get("/jobs/?state=needs_attention").content.decode()

    assert '<option value="needs_attention" selected>Needs Attention</option>' in page
    assert '<option value="awaiting_review">Awaiting Review</option>' in page
