"""Writes of the price domain. Only `revision_publish` writes catalog rows,
and only inside the transaction whose guarded UPDATE proved ownership."""

import hashlib
import os
import uuid
from collections.abc import Iterable
from decimal import Decimal

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone
from psycopg.types.json import Jsonb

from accounts.models import Workspace
from catalog.export import item_price_places, published_provenance
from catalog.mapping import mapping_parse
from catalog.models import CatalogItem, CatalogRevision, PriceSheet, Supplier, SupplierLayout
from catalog.reading import Table
from catalog.storage import StoredFile, sheet_file_store
from catalog.units import unit_code
from jobs.models import Job
from jobs.services import job_admit, job_load_checkpoint, job_requeue_with_input, outbox_write


MSG_NOT_READ = (
    "This job's sheet was never read (it could not be opened), so there are no "
    "columns to map; upload a readable file."
)

MSG_UNCHANGED = (
    "Unchanged: this sheet is identical to catalog revision {revision} of "
    "{supplier} (same file, same items), so no new revision was published."
)


class PublishOutsideTransaction(Exception):
    """revision_publish was called without the guarded transaction around it."""


class SheetNotRead(Exception):
    """A mapping was sent for a job whose table was never stored."""

    def __init__(self):
        super().__init__(MSG_NOT_READ)


def supplier_find(*, workspace_id: int, name: str) -> Supplier | None:
    """The workspace's supplier of that name, matched regardless of case and
    of runs of spaces ("ACME  Ltd" is "Acme Ltd"), or None."""
    clean = " ".join(name.split())
    return Supplier.objects.filter(workspace_id=workspace_id, name__iexact=clean).order_by("pk").first()


def supplier_get_or_create(*, workspace: Workspace, name: str) -> Supplier:
    """The workspace's supplier of that name (see supplier_find); created
    when none is."""
    clean = " ".join(name.split())
    found = supplier_find(workspace_id=workspace.pk, name=clean)
    if found is not None:
        return found
    supplier, _ = Supplier.objects.get_or_create(workspace=workspace, name=clean)
    return supplier


def pricesheet_store(
    *,
    workspace: Workspace,
    chunks: Iterable[bytes],
    original_name: str,
    content_type: str = "",
    supplier: Supplier | None = None,
    supplier_name: str = "",
    uploaded_by=None,
    max_bytes: int | None = None,
) -> PriceSheet:
    """Stream an upload into the sheets storage and record it.

    The file is stored under the sha256 of its bytes (catalog.storage): the
    stored input never changes, so every attempt of a job reads exactly what
    was uploaded."""
    stored = sheet_file_store(chunks, max_bytes=max_bytes)
    sheet = PriceSheet(
        **_pricesheet_new(
            stored,
            workspace=workspace,
            original_name=original_name,
            content_type=content_type,
            supplier_id=supplier.pk if supplier else None,
            supplier_name=supplier_name or (supplier.name if supplier else ""),
            uploaded_by=uploaded_by,
        )
    )
    sheet.save(force_insert=True)
    return sheet


def _pricesheet_new(
    stored: StoredFile,
    *,
    workspace: Workspace,
    original_name: str,
    content_type: str,
    supplier_id: int | None,
    supplier_name: str,
    uploaded_by,
) -> dict:
    """The fields (by attname) of the row recording a stored upload."""
    return {
        "id": uuid.uuid4(),
        "workspace_id": workspace.pk,
        "supplier_id": supplier_id,
        "sha256": stored.sha256,
        "size": stored.size,
        "supplier_name": supplier_name,
        "original_name": os.path.basename(original_name)[:255] or "upload",
        "content_type": content_type[:100],
        "storage_path": stored.name,
        "uploaded_by_id": uploaded_by.pk if uploaded_by is not None else None,
    }


def pricesheet_fingerprint(*, sha256: str, supplier_name: str) -> str:
    """What makes two uploads 'the same request' for an idempotency key."""
    return hashlib.sha256(f"{sha256}\n{supplier_name}".encode()).hexdigest()


# `pricesheet_admit(supplier_id=FIND_SUPPLIER)`: look the supplier up by name.
FIND_SUPPLIER = -1


def pricesheet_admit(
    *,
    workspace: Workspace,
    chunks: Iterable[bytes],
    original_name: str,
    content_type: str,
    supplier_name: str,
    idempotency_key: str,
    user,
    supplier_id: int | None = FIND_SUPPLIER,
) -> tuple[Job, bool]:
    """Store the sheet and admit its `parse_sheet` job; (job, created).

    The sheet row and the job commit together. When the key was used before,
    neither is inserted: the job it names already has its sheet, so a replay
    leaves no second row. The stored file is content-addressed and may
    already be shared by other sheets, so it stays. `supplier_id` is the
    supplier of that name when the caller has read it already (the API
    reads it with the workspace, catalog.selectors.upload_target).
    """
    supplier_name = " ".join(supplier_name.split())
    # No supplier is created here: the first publication for the name
    # creates it (revision_publish), so a refused sheet leaves none behind.
    if supplier_id == FIND_SUPPLIER:
        supplier = supplier_find(workspace_id=workspace.pk, name=supplier_name) if supplier_name else None
        supplier_id = supplier.pk if supplier else None
    # The file is stored before any statement: no transaction is open while
    # the bytes travel to the storage (and are flushed to its disk).
    stored = sheet_file_store(chunks, max_bytes=settings.UPLOAD_MAX_BYTES)
    sheet = _pricesheet_new(
        stored,
        workspace=workspace,
        original_name=original_name,
        content_type=content_type,
        supplier_id=supplier_id,
        supplier_name=supplier_name,
        uploaded_by=user,
    )
    # The sheet row, the job and its message are one statement, so one
    # transaction; the unique (workspace, idempotency_key) constraint decides
    # between concurrent requests with one key: the second waits for the
    # first to commit, inserts nothing (no second sheet row either), and
    # returns the first one's job.
    return job_admit(
        workspace_id=workspace.pk,
        kind="parse_sheet",
        payload={"sheet_id": str(sheet["id"]), "supplier_id": supplier_id, "supplier_name": supplier_name},
        idempotency_key=idempotency_key,
        fingerprint=pricesheet_fingerprint(sha256=stored.sha256, supplier_name=supplier_name),
        created_by_id=user.pk,
        rows=[(PriceSheet, sheet)],
    )


def _pack_size(item: dict) -> Decimal | None:
    return None if item.get("pack_size") is None else Decimal(str(item["pack_size"]))


def supplier_for_publication(*, workspace_id: int, name: str) -> Supplier:
    """The workspace's supplier named `name` (see supplier_find), created if
    none is, in a short transaction of its own: called before a publishing
    transaction opens, so that transaction only finds it.

    Two first publications for "Acme" and "ACME " take turns on the
    workspace's row for the moment of the creation, so the second finds the
    supplier the first made; the unique (workspace, name) decides between
    two spellings that are the same."""
    clean = " ".join(name.split())
    found = supplier_find(workspace_id=workspace_id, name=clean)
    if found is not None:
        return found
    with transaction.atomic():
        _lock_workspace(workspace_id)
        found = supplier_find(workspace_id=workspace_id, name=clean)
        if found is None:
            found, _ = Supplier.objects.get_or_create(workspace_id=workspace_id, name=clean)
    return found


def _publish_supplier_name(job) -> str:
    return " ".join(((job.payload or {}).get("supplier_name") or "").split())


def _publish_supplier(job) -> Supplier | None:
    """The job's supplier as it is now, not locked (None when it is still to
    be created: a publication whose supplier was not made beforehand)."""
    payload = job.payload or {}
    if payload.get("supplier_id") is not None:
        return Supplier.objects.select_related("current_revision").filter(pk=payload["supplier_id"]).first()
    name = _publish_supplier_name(job)
    found = supplier_find(workspace_id=job.workspace_id, name=name) if name else None
    return None if found is None else Supplier.objects.select_related("current_revision").get(pk=found.pk)


def _lock_supplier(job, supplier: Supplier | None) -> Supplier | None:
    """The shared rows, taken last: the supplier's row (two publications
    for one supplier take turns on its current revision and its numbers),
    created here under the workspace's row if it does not exist yet, or,
    for a publication without a supplier, the workspace's row."""
    name = _publish_supplier_name(job)
    if supplier is None and name:
        _lock_workspace(job.workspace_id)
        supplier = supplier_find(workspace_id=job.workspace_id, name=name) or Supplier.objects.create(
            workspace_id=job.workspace_id, name=name
        )
    if supplier is None:
        _lock_workspace(job.workspace_id)
        return None
    # NO KEY UPDATE: the key checks of other publications' revisions for
    # this supplier (written before they take their turn) are not held up.
    return Supplier.objects.select_for_update(no_key=True, of=("self",)).get(pk=supplier.pk)


def _lock_workspace(workspace_id: int) -> None:
    """Take turns with other publications of the workspace until commit. NO
    KEY UPDATE: rows that only reference the workspace (uploads, jobs) are
    not held up by it."""
    Workspace.objects.select_for_update(no_key=True).filter(pk=workspace_id).values_list("pk").first()


def _revision_is(revision: CatalogRevision, sha256: str, items: list[dict]) -> bool:
    """Whether `revision` was published from the same file with the same items."""
    published_from = (revision.job.payload or {}).get("sheet_id") if revision.job_id else None
    if not published_from or revision.item_count != len(items):
        return False
    if not PriceSheet.objects.filter(pk=published_from, sha256=sha256).exists():
        return False
    fields = (
        "sku",
        "description",
        "unit",
        "pack_size",
        "unit_price",
        "currency",
        "source_sheet",
        "source_row",
        "source_column",
    )
    published = list(revision.items.order_by("pk").values_list(*fields))
    staged = [
        (
            item["sku"] or "",
            item.get("description") or "",
            item.get("unit"),
            _pack_size(item),
            Decimal(item["unit_price"]),
            item["currency"],
            item["source"]["sheet"],
            item["source"]["row"],
            item["source"].get("column") or "",
        )
        for item in items
    ]
    return published == staged


def _next_number(*, workspace_id: int, supplier: Supplier | None, revision: CatalogRevision) -> int:
    """The number of the next revision, `revision` (still pending) aside:
    the supplier's row, or for a publication without one the workspace's
    row, is locked (_lock_supplier), so two publications never take the
    same number."""
    if supplier is not None:
        revisions = CatalogRevision.objects.filter(supplier=supplier)
    else:
        revisions = CatalogRevision.objects.filter(workspace_id=workspace_id, supplier=None)
    return (revisions.exclude(pk=revision.pk).aggregate(last=Max("number"))["last"] or 0) + 1


# A revision's number while its items are written, before it takes its turn
# for the real one: unique per job (the real numbers stay far below), so
# pending revisions of one supplier never meet on the unique number.
PENDING_NUMBER = 1_000_000_000


def _pending_number(job) -> int:
    return PENDING_NUMBER + job.pk.int % PENDING_NUMBER


def _check_references_now() -> None:
    """Run the foreign-key checks of the rows written so far now, not at
    commit: 100,000 items cost their checks before the shared rows are
    taken, not while they are held. Django's keys are deferred by default;
    that is restored."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")


_ITEM_COLUMNS = (
    "revision_id",
    "sku",
    "description",
    "unit",
    "unit_code",
    "pack_size",
    "unit_price",
    "price_places",
    "currency",
    "source_sheet",
    "source_row",
    "source_column",
    "provenance",
)


def _items_copy(revision: CatalogRevision, items: list[dict]) -> None:
    """Write a revision's items with COPY, in the caller's transaction: the
    rows stream in one command instead of an INSERT of bound values per
    batch (20,000 items take a fraction of a second, not seconds)."""
    statement = f"COPY {CatalogItem._meta.db_table} ({', '.join(_ITEM_COLUMNS)}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for item in items:
            copy.write_row(
                (
                    revision.pk,
                    item["sku"] or "",
                    item.get("description") or "",
                    item.get("unit"),
                    unit_code(item.get("unit")) or "",
                    _pack_size(item),
                    Decimal(item["unit_price"]),
                    item_price_places(item),
                    item["currency"],
                    item["source"]["sheet"],
                    item["source"]["row"],
                    item["source"].get("column") or "",
                    Jsonb(published_provenance(item)),
                )
            )


def revision_publish(*, job, approved_by=None) -> dict:
    """Publish a job's accepted output as a catalog revision and make it the
    supplier's current one. Called only inside the transaction of a guarded
    accept or approve; `CatalogRevision.job` is unique, so a second
    publication of the same job fails instead of duplicating the catalog.

    Lock order: the job's row (the guarded UPDATE, before this), then the
    revision and its items, written with no shared row held, then, last and
    briefly, the supplier's row (or the workspace's), for the number, the
    current revision and the event. A publication that is slow to write its
    items holds up no other publication of the workspace or the supplier.

    The supplier named at upload is made beforehand (supplier_for_publication);
    one still missing is created in the last step. A sheet identical to the
    supplier's current revision (same file, same items) publishes nothing:
    the result points at that revision and says it is unchanged."""
    if not connection.in_atomic_block:
        raise PublishOutsideTransaction("revision_publish must run inside the guarded transaction")
    items = (job.output or {}).get("items", [])
    supplier = _publish_supplier(job)
    unchanged = _unchanged(job, supplier, items, approved_by)
    if unchanged is not None:
        return unchanged
    revision = CatalogRevision.objects.create(
        workspace_id=job.workspace_id,
        supplier=supplier,
        job=job,
        attempt=job.attempt,
        approved_by=approved_by,
        item_count=len(items),
        number=_pending_number(job),
    )
    _items_copy(revision, items)
    _check_references_now()
    # Last: the shared rows, held from here to the commit.
    supplier = _lock_supplier(job, supplier)
    number = _next_number(workspace_id=job.workspace_id, supplier=supplier, revision=revision)
    CatalogRevision.objects.filter(pk=revision.pk).update(number=number, supplier=supplier)
    if supplier is not None:
        Supplier.objects.filter(pk=supplier.pk).update(current_revision=revision)
        if approved_by is not None:
            supplier_layout_remember(job=job, supplier=supplier, approved_by=approved_by)
    supplier_public_id = str(supplier.public_id) if supplier is not None else None
    # Events and results name revisions and suppliers by their public ids,
    # the ones the catalog API takes (`/api/suppliers/<id>/changes?since=...`).
    outbox_write(
        workspace_id=job.workspace_id,
        topic="catalog.published",
        payload={
            "revision_id": str(revision.public_id),
            "job_id": str(job.pk),
            "supplier_id": supplier_public_id,
            "item_count": len(items),
            "approved_by": getattr(approved_by, "username", None),
        },
    )
    return {"revision_id": str(revision.public_id), "item_count": len(items)}


def _unchanged(job, supplier: Supplier | None, items: list[dict], approved_by) -> dict | None:
    """The result of a publication identical to the supplier's current
    revision, or None. Compared before any lock; the supplier's row is then
    locked and its current revision must still be the one compared."""
    current = supplier.current_revision if supplier else None
    sheet = PriceSheet.objects.filter(pk=(job.payload or {}).get("sheet_id")).only("sha256").first()
    if current is None or sheet is None or not _revision_is(current, sheet.sha256, items):
        return None
    locked = _lock_supplier(job, supplier)
    if locked.current_revision_id != current.pk:
        return None  # another publication moved it since: publish
    if approved_by is not None:
        supplier_layout_remember(job=job, supplier=supplier, approved_by=approved_by)
    return {
        "revision_id": str(current.public_id),
        "item_count": current.item_count,
        "unchanged": True,
        "note": MSG_UNCHANGED.format(revision=current.number, supplier=supplier.name),
    }


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
    return job_requeue_with_input(
        job_id=job_id,
        expected_version=expected_version,
        payload_changes={"mapping": stamped},
        by_label=by,
        reason="column mapping applied",
    )


def supplier_layout_remember(*, job, supplier: Supplier, approved_by) -> SupplierLayout | None:
    """Remember the mapping a reviewer set for this job's supplier, keyed by
    the signature of the sheets it read. Only a mapping a person set is
    remembered: inferred columns are never stored as a layout. Runs in the
    approval's transaction."""
    output = job.output if isinstance(job.output, dict) else {}
    mapping = (job.payload or {}).get("mapping")
    if not isinstance(mapping, dict) or (output.get("layout") or {}).get("source") != "reviewer":
        return None
    signatures = {
        r["sheet"]: r["signature"]
        for r in output.get("columns") or []
        if isinstance(r, dict) and r.get("signature")
    }
    names = [entry["sheet"] for entry in mapping["sheets"]]
    if any(name not in signatures for name in names):
        return None
    signature = hashlib.sha256("\n".join(signatures[n] for n in names).encode()).hexdigest()
    layout, _ = SupplierLayout.objects.update_or_create(
        supplier_id=supplier.pk,
        signature=signature,
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
