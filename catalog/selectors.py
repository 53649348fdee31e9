"""Reads of the catalog pages. A user sees the suppliers and revisions of the
workspaces they are a member of, nothing else: anything outside them reads
as missing (DoesNotExist), exactly like an unknown id."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import connection
from django.db.models import Q, QuerySet
from django.db.models.fields.json import KeyTransform

from accounts.models import Membership, Workspace
from catalog.export import PROVENANCE_FIELDS, price_text
from catalog.items import MODEL_FIELDS, VALUE_FIELDS
from catalog.models import CatalogItem, CatalogRevision, PriceSheet, Supplier, SupplierLayout
from config.prepared import PreparedQuery, prepared_cursor
from jobs.models import REQUEUEABLE_STATES, Job, JobCheckpoint, State
from jobs.selectors import job_url, jobs_with_live_phase

User = AbstractBaseUser | AnonymousUser
DIFF_FIELDS = tuple(name for name in VALUE_FIELDS if name != "sku")  # the SKU is the key
ITEM_FIELDS = MODEL_FIELDS
EXPORT_FIELDS = (
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
    "provenance",
)


def member_workspace_ids(*, user: User) -> QuerySet:
    if not user.is_authenticated:
        return Membership.objects.none().values("workspace_id")
    return Membership.objects.filter(user=user).values("workspace_id")


def _sheet_id(job: Job) -> uuid.UUID | None:
    raw = (job.payload or {}).get("sheet_id")
    try:
        return uuid.UUID(str(raw)) if raw else None
    except ValueError:
        return None


def job_sheets(*, jobs: list[Job]) -> dict[uuid.UUID, PriceSheet | None]:
    """The uploaded sheet (with its supplier and workspace) of each job, in
    one query for a whole page; None for jobs that read no sheet."""
    ids = {sheet_id for job in jobs if (sheet_id := _sheet_id(job)) is not None}
    sheets = PriceSheet.objects.filter(pk__in=ids).select_related("supplier", "workspace")
    by_id = {sheet.pk: sheet for sheet in sheets}
    return {job.pk: by_id.get(_sheet_id(job)) for job in jobs}


def job_sheet(*, job: Job) -> PriceSheet | None:
    """The uploaded sheet of one job."""
    return job_sheets(jobs=[job])[job.pk]


def _item_view(item: Any) -> dict:
    # Django's connection hands jsonb over as its text.
    item = json.loads(item) if isinstance(item, (str, bytes)) else item
    item = item if isinstance(item, dict) else {}
    return {**{field: item.get(field) for field in ITEM_FIELDS}, "flags": item.get("flags") or []}


# The output's `items` when it is an array, else none: read in the database,
# so the web process never holds more of the output than the page it shows.
_OUTPUT_ITEMS = (
    """CASE WHEN jsonb_typeof("jobs_job"."output" -> 'items') = 'array' """
    """THEN "jobs_job"."output" -> 'items' ELSE '[]'::jsonb END"""
)
_COUNT_SQL = f'SELECT jsonb_array_length({_OUTPUT_ITEMS}) FROM "jobs_job" WHERE "jobs_job"."id" = %s'
_SLICE_SQL = (
    f'SELECT e.item FROM "jobs_job", jsonb_array_elements({_OUTPUT_ITEMS}) '
    'WITH ORDINALITY AS e(item, n) WHERE "jobs_job"."id" = %s ORDER BY e.n OFFSET %s LIMIT %s'
)


class OutputItems:
    """A job's output items with their flags, read a slice at a time: the
    rows of a paginator (`len()` and `[start:stop]`), each a query."""

    def __init__(self, job_id: uuid.UUID):
        self.job_id = job_id

    def __len__(self) -> int:
        with connection.cursor() as cursor:
            cursor.execute(_COUNT_SQL, [self.job_id])
            found = cursor.fetchone()
        return found[0] if found else 0

    def __getitem__(self, index: slice) -> list[dict]:
        if not isinstance(index, slice) or index.step not in (None, 1):
            raise TypeError("output items are read by slices")
        start = max(index.start or 0, 0)
        stop = len(self) if index.stop is None else index.stop
        if stop <= start:
            return []
        with connection.cursor() as cursor:
            cursor.execute(_SLICE_SQL, [self.job_id, start, stop - start])
            return [_item_view(row[0]) for row in cursor.fetchall()]

    def __iter__(self) -> Iterator[dict]:
        raise TypeError("output items are read by slices, never whole")


def sheet_items(job: Job) -> OutputItems:
    """The job's items with their flags: published for a completed job,
    staged (as the reviewer sees and edits them) otherwise; read a page at a
    time, never the whole output."""
    return OutputItems(job.pk)


def job_revision(job: Job) -> CatalogRevision | None:
    """The catalog revision a completed job's result names (its own, or the
    identical one it left unchanged), or None."""
    revision_id = (job.result or {}).get("revision_id") if isinstance(job.result, dict) else None
    try:
        return CatalogRevision.objects.filter(public_id=uuid.UUID(str(revision_id))).first()
    except ValueError:
        return None


def with_reading_report(queryset: QuerySet) -> QuerySet:
    """Jobs annotated with their output's `columns` and `layout`: two small
    keys read in the database, so lists need not load the whole output."""
    return queryset.annotate(
        output_columns=KeyTransform("columns", "output"), output_layout=KeyTransform("layout", "output")
    )


# A member's job with its live phase and its reading report: what the
# status resource and the job page show, compiled once from the querysets
# that define each part (clients poll it after every upload).
_MEMBER_JOB = PreparedQuery(
    lambda user_id, job_id: with_reading_report(
        jobs_with_live_phase(Job.objects.for_member(get_user_model()(pk=user_id)))
    ).filter(pk=job_id),
    user_id=-1_987_654_321,
    job_id=uuid.UUID("5f1c0a7e-9b9e-4d5e-8f3a-0c2b7d6e4a91"),
)


def member_job_with_report(*, user: User, job_id: uuid.UUID) -> Job | None:
    """The job with its `phase_seconds` and its output's `columns` and
    `layout` (the `output` itself deferred), if the user is a member of its
    workspace; None otherwise, as for an id that does not exist."""
    if not user.is_authenticated:
        return None
    return _MEMBER_JOB.first(user_id=user.pk, job_id=job_id)


def job_reading_report(job: Job) -> dict:
    """How a sheet job's table was read: `columns` (per sheet: header row,
    each column's role, evidence and confidence) and `layout` (where the
    columns came from). From the accepted output, or, for a sheet that was
    refused, from the checkpoint the handler left; both None before reading."""
    if hasattr(job, "output_columns"):
        report = {"columns": job.output_columns, "layout": job.output_layout}
    elif "output" in job.get_deferred_fields():
        report = Job.objects.filter(pk=job.pk).values(
            columns=KeyTransform("columns", "output"), layout=KeyTransform("layout", "output")
        ).first() or {"columns": None, "layout": None}
    else:
        output = job.output if isinstance(job.output, dict) else {}
        report = {"columns": output.get("columns"), "layout": output.get("layout")}
    if report["columns"] is None and job.state == State.NEEDS_ATTENTION:
        saved = (
            JobCheckpoint.objects.filter(job_id=job.pk, name="columns").values_list("data", flat=True).first()
        )
        if isinstance(saved, dict):
            report = {"columns": saved.get("columns"), "layout": saved.get("layout")}
    return {"columns": report["columns"], "layout": report["layout"]}


def sheet_result(job: Job) -> dict | None:
    """A sheet job's result as the status shows it: the revision and its item count."""
    if not job.result:
        return None
    result = {"revision_id": job.result.get("revision_id"), "item_count": job.result.get("item_count")}
    if job.result.get("unchanged"):
        # The sheet was identical to the supplier's current revision, which
        # `revision_id` names: nothing new was published, and `note` says so.
        result.update(unchanged=True, note=job.result.get("note"))
    return result


def sheet_status_fields(job: Job) -> dict:
    """What a sheet job's status adds to the generic one (the `parse_sheet`
    kind registers it): the links to its items and its page, the mapping
    link while a reviewer can send one, and how its sheet was read
    (`columns`, `layout`)."""
    report = job_reading_report(job)
    links = {"items": job_url("api:job-items", job.pk), "page": sheet_job_page(job)}
    if report["columns"] is not None and job.state in REQUEUEABLE_STATES:
        # Where a reviewer sends a column mapping for the sheet that was read.
        links["mapping"] = job_url("api:job-mapping", job.pk)
    return {"result": sheet_result(job), "links": links, **report}


def sheet_job_page(job: Job) -> str:
    return job_url("jobs:detail", job.pk)


def sheet_job_review(job: Job) -> str:
    return job_url("review:detail", job.pk)


def suppliers_for_member(*, user: User) -> QuerySet[Supplier]:
    return (
        Supplier.objects.filter(workspace_id__in=member_workspace_ids(user=user))
        .select_related("workspace", "current_revision")
        .order_by("workspace__name", "name")
    )


def supplier_get(*, user: User, supplier_id: int) -> Supplier:
    return suppliers_for_member(user=user).get(pk=supplier_id)


def revisions_for_member(*, user: User) -> QuerySet[CatalogRevision]:
    return CatalogRevision.objects.filter(workspace_id__in=member_workspace_ids(user=user)).select_related(
        "supplier", "workspace", "approved_by"
    )


def revisions_without_supplier(*, user: User) -> QuerySet[CatalogRevision]:
    return revisions_for_member(user=user).filter(supplier__isnull=True).order_by("-published_at", "-pk")


def revision_get(*, user: User, revision_id: int) -> CatalogRevision:
    return revisions_for_member(user=user).get(pk=revision_id)


def supplier_get_public(*, user: User, public_id) -> Supplier:
    """A member's supplier by its public id; DoesNotExist otherwise."""
    return suppliers_for_member(user=user).get(public_id=public_id)


def revision_get_public(*, user: User, public_id) -> CatalogRevision:
    """A member's revision by its public id; DoesNotExist otherwise."""
    return revisions_for_member(user=user).get(public_id=public_id)


def supplier_revisions(*, supplier: Supplier) -> QuerySet[CatalogRevision]:
    return supplier.revisions.select_related("approved_by").order_by("-published_at", "-pk")


def revision_previous(*, revision: CatalogRevision) -> CatalogRevision | None:
    """The revision of the same supplier published just before this one."""
    if revision.supplier_id is None:
        return None
    return (
        CatalogRevision.objects.filter(supplier_id=revision.supplier_id, pk__lt=revision.pk)
        .order_by("-pk")
        .first()
    )


def revision_items(*, revision: CatalogRevision, query: str = "", sku: str = "") -> QuerySet[CatalogItem]:
    items = revision.items.order_by("sku", "pk")
    query = query.strip()
    if query:
        items = items.filter(Q(sku__icontains=query) | Q(description__icontains=query))
    if sku:
        items = items.filter(sku=sku)
    return items


def item_provenance(stored: dict | None) -> dict:
    """Per field of a published item, where its value came from: extracted
    from the sheet, or set by a reviewer (who, when, and what was extracted)."""
    stored = stored if isinstance(stored, dict) else {}
    out = {}
    for name in PROVENANCE_FIELDS:
        entry = stored.get(name)
        out[name] = (
            {
                "source": "reviewer",
                "by": entry.get("by"),
                "at": entry.get("at"),
                "extracted": entry.get("extracted"),
            }
            if isinstance(entry, dict)
            else {"source": "extracted"}
        )
    return out


EXPORT_CHUNK_ROWS = 2000


def revision_export_rows(*, revision: CatalogRevision) -> Iterator[dict[str, Any]]:
    """The revision's items in export order, read from a server-side cursor
    EXPORT_CHUNK_ROWS at a time: memory does not grow with the revision."""
    return (
        revision.items.order_by("source_sheet", "source_row", "pk")
        .values(*EXPORT_FIELDS)
        .iterator(chunk_size=EXPORT_CHUNK_ROWS)
    )


@dataclass(frozen=True)
class Change:
    sku: str
    old: dict[str, Any]
    new: dict[str, Any]
    fields: tuple[str, ...]

    @property
    def price_changed(self) -> bool:
        return "unit_price" in self.fields or "currency" in self.fields

    @property
    def other_changes(self) -> list[tuple[str, Any, Any]]:
        """(field, old, new) for the changes besides the price and currency."""
        return [(f, self.old[f], self.new[f]) for f in self.fields if f not in ("unit_price", "currency")]


@dataclass(frozen=True)
class RevisionDiff:
    old: CatalogRevision | None
    new: CatalogRevision | None
    added: list[dict[str, Any]]
    removed: list[dict[str, Any]]
    changed: list[Change]
    unchanged: int


def _keyed(revision: CatalogRevision | None) -> dict[tuple[str, int], dict[str, Any]]:
    """Items by (SKU, occurrence): a SKU listed twice pairs up in sheet order.
    Items without a SKU are matched by their description. No revision: no items."""
    keyed: dict[tuple[str, int], dict[str, Any]] = {}
    if revision is None:
        return keyed
    seen: dict[str, int] = {}
    rows = revision.items.order_by("source_sheet", "source_row", "pk").values(
        "sku", *DIFF_FIELDS, "price_places", "unit_code", "source_sheet", "source_row", "source_column"
    )
    for item in rows:
        key = item["sku"] or f"description: {item['description']}"
        n = seen.get(key, 0)
        seen[key] = n + 1
        keyed[(key, n)] = item
    return keyed


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        return a.compare_total(b) == 0 or a == b
    return a == b


def revision_diff(*, old: CatalogRevision | None, new: CatalogRevision | None) -> RevisionDiff:
    """What changed from `old` to `new`: added, removed and changed SKUs.
    `old=None` reads as an empty catalog (everything in `new` is added)."""
    before, after = _keyed(old), _keyed(new)
    added = [after[k] for k in after if k not in before]
    removed = [before[k] for k in before if k not in after]
    changed, unchanged = [], 0
    for key in after:
        if key not in before:
            continue
        fields = tuple(f for f in DIFF_FIELDS if not _same(before[key][f], after[key][f]))
        if fields:
            changed.append(Change(sku=key[0], old=before[key], new=after[key], fields=fields))
        else:
            unchanged += 1
    return RevisionDiff(
        old=old,
        new=new,
        added=sorted(added, key=lambda i: i["sku"]),
        removed=sorted(removed, key=lambda i: i["sku"]),
        changed=sorted(changed, key=lambda c: c.sku),
        unchanged=unchanged,
    )


def supplier_layouts_data(*, supplier_id: int | None) -> list[dict]:
    """The supplier's remembered layouts, newest first, as plain data for
    `catalog.mapping.choose_mapping`."""
    if supplier_id is None:
        return []
    return [
        {
            "id": layout.pk,
            "mapping": layout.mapping,
            "sheet_signatures": layout.sheet_signatures,
            "sheet_names": layout.sheet_names,
            "approved_by": layout.approved_by_name,
            "approved_at": layout.approved_at.isoformat(),
        }
        for layout in SupplierLayout.objects.filter(supplier_id=supplier_id).order_by("-approved_at", "-pk")
    ]


def supplier_current_items(*, supplier_id: int | None) -> list[dict[str, Any]]:
    """The items of the supplier's current revision, as plain data ([] without one)."""
    if supplier_id is None:
        return []
    revision_id = (
        Supplier.objects.filter(pk=supplier_id).values_list("current_revision_id", flat=True).first()
    )
    if revision_id is None:
        return []
    return [
        {
            "sku": sku,
            "description": description,
            "unit": unit,
            "pack_size": pack_size,
            "unit_price": str(price),
            "currency": currency,
            "price_text": price_text(price, places),
        }  # as the catalog shows it, for messages
        for sku, description, unit, pack_size, price, places, currency in CatalogItem.objects.filter(
            revision_id=revision_id
        )
        .values_list("sku", "description", "unit", "pack_size", "unit_price", "price_places", "currency")
        .iterator()
    ]


@dataclass(frozen=True)
class UploadTarget:
    """What an upload must know before its bytes are stored: the caller's
    workspaces that it may go to (none, one, or two when it is ambiguous),
    and in the first of them the seconds to wait (0: it may upload now),
    and the supplier of the given name."""

    workspaces: list[Workspace]
    wait_seconds: float
    supplier_id: int | None


# The rate window counts the workspace's uploads admitted in the last minute
# (database time); a key the workspace already used (a replay) never waits.
# `now()` rather than clock_timestamp() bounds the index scan on
# (workspace, created_at): a volatile bound would be a filter over every
# job the workspace ever had.
_UPLOAD_TARGET_SQL = """
WITH mine AS (
    SELECT w.id, w.slug FROM catalog_workspace w JOIN catalog_membership m ON m.workspace_id = w.id
    WHERE m.user_id = %(user)s AND (%(slug)s = '' OR w.slug = %(slug)s)
    ORDER BY w.slug LIMIT 2
)
SELECT id, slug,
    EXISTS (SELECT 1 FROM jobs_job j WHERE j.workspace_id = mine.id AND j.idempotency_key = %(key)s),
    (SELECT extract(epoch FROM oldest + interval '1 minute' - clock_timestamp()) FROM (
        SELECT j.created_at AS oldest FROM jobs_job j
        WHERE j.workspace_id = mine.id AND j.kind = 'parse_sheet' AND j.created_at > now() - interval '1 minute'
        ORDER BY j.created_at DESC OFFSET %(offset)s LIMIT 1) AS window_end),
    (SELECT s.id FROM catalog_supplier s
     WHERE %(supplier)s <> '' AND s.workspace_id = mine.id AND upper(s.name) = upper(%(supplier)s)
     ORDER BY s.id LIMIT 1)
FROM mine ORDER BY slug
"""


def upload_target(*, user_id: int, slug: str, key: str, supplier_name: str, limit: int) -> UploadTarget:
    """The upload's workspace (`slug`, or the caller's only one), the wait
    when the workspace has admitted `limit` uploads in the last minute (the
    oldest of them leaves the window), and the supplier named
    `supplier_name` (see catalog.services.supplier_find). One statement: it
    runs before every upload."""
    with prepared_cursor() as cursor:
        cursor.execute(
            _UPLOAD_TARGET_SQL,
            {
                "user": user_id,
                "slug": slug,
                "key": key,
                "offset": max(limit - 1, 0),
                "supplier": supplier_name,
            },
        )
        rows = cursor.fetchall()
    workspaces = [Workspace.from_db(connection.alias, ["id", "slug"], row[:2]) for row in rows]
    if not rows:
        return UploadTarget(workspaces=[], wait_seconds=0.0, supplier_id=None)
    _, _, replay, wait, supplier_id = rows[0]
    if replay:
        wait_seconds = 0.0
    elif limit < 1:
        wait_seconds = 60.0
    else:
        wait_seconds = max(float(wait), 1.0) if wait is not None else 0.0
    return UploadTarget(workspaces=workspaces, wait_seconds=wait_seconds, supplier_id=supplier_id)
