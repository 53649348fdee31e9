"""Writes of the price domain. Only `revision_publish` writes catalog rows,
and only inside the transaction whose guarded UPDATE proved ownership."""

import hashlib
import os
import tempfile
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction

from accounts.models import Workspace
from catalog.models import CatalogItem, CatalogRevision, PriceSheet, Supplier
from catalog.units import unit_normalize
from jobs.models import Job
from jobs.services import job_admit, outbox_write


class PublishOutsideTransaction(Exception):
    """revision_publish was called without the guarded transaction around it."""


def supplier_get_or_create(*, workspace: Workspace, name: str) -> Supplier:
    """The workspace's supplier of that name, matched regardless of case and
    of runs of spaces ("ACME  Ltd" is "Acme Ltd"); created when none is."""
    clean = " ".join(name.split())
    found = (Supplier.objects.filter(workspace=workspace, name__iexact=clean).order_by("pk").first())
    if found is not None:
        return found
    supplier, _ = Supplier.objects.get_or_create(workspace=workspace, name=clean)
    return supplier


def sheet_path(sheet: PriceSheet) -> Path:
    return Path(settings.MEDIA_ROOT) / sheet.storage_path


def pricesheet_store(*, workspace: Workspace, chunks: Iterable[bytes], original_name: str,
                     content_type: str = "", supplier: Supplier | None = None,
                     uploaded_by=None, max_bytes: int | None = None) -> PriceSheet:
    """Stream an upload to content-addressed storage and record it.

    The bytes go to a temporary file while their sha256 is computed, then
    are renamed to `sheets/<sha256>`: the stored input never changes, so
    every attempt of a job reads exactly what was uploaded."""
    root = Path(settings.MEDIA_ROOT) / "sheets"
    root.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    with tempfile.NamedTemporaryFile(dir=root, delete=False) as tmp:
        try:
            for chunk in chunks:
                size += len(chunk)
                if max_bytes is not None and size > max_bytes:
                    raise UploadTooLarge(max_bytes)
                digest.update(chunk)
                tmp.write(chunk)
            tmp.flush()
            os.fsync(tmp.fileno())
        except BaseException:
            os.unlink(tmp.name)
            raise
    sha = digest.hexdigest()
    relative = f"sheets/{sha}"
    os.replace(tmp.name, root / sha)
    return PriceSheet.objects.create(
        workspace=workspace, supplier=supplier, sha256=sha, size=size,
        original_name=os.path.basename(original_name)[:255] or "upload",
        content_type=content_type[:100], storage_path=relative, uploaded_by=uploaded_by,
    )


def pricesheet_fingerprint(*, sha256: str, supplier_name: str) -> str:
    """What makes two uploads 'the same request' for an idempotency key."""
    return hashlib.sha256(f"{sha256}\n{supplier_name}".encode()).hexdigest()


def pricesheet_admit(*, workspace: Workspace, chunks: Iterable[bytes], original_name: str,
                 content_type: str, supplier_name: str, idempotency_key: str,
                 user) -> tuple[Job, bool]:
    """Store the sheet and admit its `parse_sheet` job; (job, created).

    The sheet row and the job commit together. When the key was used before,
    the transaction is rolled back: the job it names already has its sheet,
    so a replay leaves no second row. The file itself is content-addressed
    and may already be shared by other sheets, so it stays.
    """
    supplier: Supplier | None = None
    if supplier_name:
        supplier = supplier_get_or_create(workspace=workspace, name=supplier_name)
    # The file is written before the first statement of the transaction, so
    # no transaction is open during the disk I/O.
    with transaction.atomic():
        sheet: PriceSheet = pricesheet_store(
            workspace=workspace, chunks=chunks, original_name=original_name,
            content_type=content_type, supplier=supplier, uploaded_by=user,
            max_bytes=settings.UPLOAD_MAX_BYTES,
        )
        # The unique (workspace, idempotency_key) constraint decides between
        # concurrent requests with one key: the second INSERT waits for the
        # first to commit, fails, and returns the first one's job.
        job, created = job_admit(
            workspace_id=workspace.pk, kind="parse_sheet",
            payload={"sheet_id": str(sheet.pk), "supplier_id": supplier.pk if supplier else None},
            idempotency_key=idempotency_key,
            fingerprint=pricesheet_fingerprint(sha256=sheet.sha256, supplier_name=supplier_name),
            created_by_id=user.pk,
        )
        if not created:
            transaction.set_rollback(True)
    return job, created


class UploadTooLarge(Exception):
    def __init__(self, limit: int):
        super().__init__(f"the upload is larger than {limit} bytes")
        self.limit = limit


def revision_publish(*, job, approved_by=None) -> dict:
    """Publish a job's accepted output as a catalog revision and make it the
    supplier's current one. Called only inside the transaction of a guarded
    accept or approve; `CatalogRevision.job` is unique, so a second
    publication of the same job fails instead of duplicating the catalog."""
    if not connection.in_atomic_block:
        raise PublishOutsideTransaction("revision_publish must run inside the guarded transaction")
    items = (job.output or {}).get("items", [])
    supplier_id = (job.payload or {}).get("supplier_id")
    revision = CatalogRevision.objects.create(
        workspace_id=job.workspace_id, supplier_id=supplier_id, job=job,
        attempt=job.attempt, approved_by=approved_by, item_count=len(items),
    )
    CatalogItem.objects.bulk_create(
        (
            CatalogItem(
                revision=revision,
                sku=item["sku"] or "",
                description=item.get("description") or "",
                unit=item.get("unit"),
                unit_code=unit_normalize(item.get("unit"))[0] or "",
                pack_size=None if item.get("pack_size") is None else Decimal(str(item["pack_size"])),
                unit_price=Decimal(item["unit_price"]),
                currency=item["currency"],
                source_sheet=item["source"]["sheet"],
                source_row=item["source"]["row"],
            )
            for item in items
        ),
        batch_size=1000,
    )
    if supplier_id is not None:
        Supplier.objects.filter(pk=supplier_id).update(current_revision=revision)
    supplier_public_id = None
    if supplier_id is not None:
        supplier_public_id = str(Supplier.objects.values_list("public_id", flat=True).get(pk=supplier_id))
    # Events and results name revisions and suppliers by their public ids,
    # the ones the catalog API takes (`/api/suppliers/<id>/changes?since=...`).
    outbox_write(
        workspace_id=job.workspace_id,
        topic="catalog.published",
        payload={"revision_id": str(revision.public_id), "job_id": str(job.pk),
                 "supplier_id": supplier_public_id, "item_count": len(items),
                 "approved_by": getattr(approved_by, "username", None)},
    )
    return {"revision_id": str(revision.public_id), "item_count": len(items)}
