"""Writes of the price domain. Only `revision_publish` writes catalog rows,
and only inside the transaction whose guarded UPDATE proved ownership."""

import hashlib
import os
from collections.abc import Iterable
from decimal import Decimal

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from accounts.models import Workspace
from catalog.mapping import mapping_parse
from catalog.models import CatalogItem, CatalogRevision, PriceSheet, Supplier, SupplierLayout
from catalog.reading import Table
from catalog.storage import sheet_file_store
from catalog.units import unit_normalize
from jobs.models import Job
from jobs.services import job_admit, job_load_checkpoint, job_requeue_with_input, outbox_write


MSG_NOT_READ = ("This job's sheet was never read (it could not be opened), so there are no "
               "columns to map; upload a readable file.")


class PublishOutsideTransaction(Exception):
    """revision_publish was called without the guarded transaction around it."""


class SheetNotRead(Exception):
    """A mapping was sent for a job whose table was never stored."""

    def __init__(self):
        super().__init__(MSG_NOT_READ)


def supplier_get_or_create(*, workspace: Workspace, name: str) -> Supplier:
    """The workspace's supplier of that name, matched regardless of case and
    of runs of spaces ("ACME  Ltd" is "Acme Ltd"); created when none is."""
    clean = " ".join(name.split())
    found = (Supplier.objects.filter(workspace=workspace, name__iexact=clean).order_by("pk").first())
    if found is not None:
        return found
    supplier, _ = Supplier.objects.get_or_create(workspace=workspace, name=clean)
    return supplier


def pricesheet_store(*, workspace: Workspace, chunks: Iterable[bytes], original_name: str,
                     content_type: str = "", supplier: Supplier | None = None,
                     uploaded_by=None, max_bytes: int | None = None) -> PriceSheet:
    """Stream an upload into the sheets storage and record it.

    The file is stored under the sha256 of its bytes (catalog.storage): the
    stored input never changes, so every attempt of a job reads exactly what
    was uploaded."""
    stored = sheet_file_store(chunks, max_bytes=max_bytes)
    return PriceSheet.objects.create(
        workspace=workspace, supplier=supplier, sha256=stored.sha256, size=stored.size,
        original_name=os.path.basename(original_name)[:255] or "upload",
        content_type=content_type[:100], storage_path=stored.name, uploaded_by=uploaded_by,
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
    so a replay leaves no second row. The stored file is content-addressed
    and may already be shared by other sheets, so it stays.
    """
    supplier: Supplier | None = None
    if supplier_name:
        supplier = supplier_get_or_create(workspace=workspace, name=supplier_name)
    # The file is stored before the first statement of the transaction, so
    # no transaction is open while the bytes travel to the storage.
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
        if approved_by is not None:
            supplier_layout_remember(job=job, approved_by=approved_by)
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


# --- column mappings and remembered layouts ------------------------------------


def job_table(*, job_id) -> Table | None:
    """The table a job's sheet was read into (its checkpoint), or None."""
    data = job_load_checkpoint(job_id=job_id, name="table")
    return Table.from_json(data) if data else None


def pricesheet_mapping_apply(*, job_id, expected_version: int, data: dict, user) -> int:
    """Check a reviewer's column mapping against the job's table and send the
    job back to the queue with it; returns the job's new version.

    Raises MappingInvalid (nothing changed) for a mapping the table cannot
    take, SheetNotRead when there is no table, and the transition's
    VersionConflict / InvalidTransition when the job moved on."""
    table = job_table(job_id=job_id)
    if table is None:
        raise SheetNotRead()
    mapping = mapping_parse(data, table)
    by = user.get_username()
    stamped = {**mapping, "set_by": by, "set_at": timezone.now().isoformat()}
    return job_requeue_with_input(job_id=job_id, expected_version=expected_version,
                                  payload_changes={"mapping": stamped}, by_label=by,
                                  reason="column mapping applied")


def supplier_layout_remember(*, job, approved_by) -> SupplierLayout | None:
    """Remember the mapping a reviewer set for this job's supplier, keyed by
    the signature of the sheets it read. Only a mapping a person set is
    remembered: inferred columns are never stored as a layout. Runs in the
    approval's transaction."""
    output = job.output if isinstance(job.output, dict) else {}
    mapping = (job.payload or {}).get("mapping")
    supplier_id = (job.payload or {}).get("supplier_id")
    if (supplier_id is None or not isinstance(mapping, dict)
            or (output.get("layout") or {}).get("source") != "reviewer"):
        return None
    signatures = {r["sheet"]: r["signature"] for r in output.get("columns") or []
                  if isinstance(r, dict) and r.get("signature")}
    names = [entry["sheet"] for entry in mapping["sheets"]]
    if any(name not in signatures for name in names):
        return None
    signature = hashlib.sha256("\n".join(signatures[n] for n in names).encode()).hexdigest()
    layout, _ = SupplierLayout.objects.update_or_create(
        supplier_id=supplier_id, signature=signature,
        defaults={
            "workspace_id": job.workspace_id,
            "sheet_names": ", ".join(names)[:500],
            "mapping": {"sheets": mapping["sheets"], "currency": mapping.get("currency")},
            "sheet_signatures": {n: signatures[n] for n in names},
            "approved_by": approved_by,
            "approved_by_name": approved_by.get_username(),
            "job": job,
        },
    )
    return layout
