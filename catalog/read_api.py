"""The catalog read API for downstream systems: suppliers, their current
items, revisions (JSON, CSV, XLSX) and the changes between two revisions.

Read-only and workspace-scoped like the jobs API: a supplier or revision of
another workspace is the same 404 as one that does not exist. Ids are the
random public ids, never the integer keys.

A published revision never changes, so every answer that reads one carries
a strong ETag derived from what the answer is made of (the revisions it
reads and the query), and `If-None-Match` answers 304 without reading the
items. Answers are `Cache-Control: private, no-cache`: a client may keep
them and revalidate, shared caches never store them (they are per user).
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from decimal import Decimal
from typing import Literal
from uuid import UUID

from django.http import HttpRequest, HttpResponse, HttpResponseNotModified, JsonResponse
from django.urls import reverse
from django.utils.http import parse_etags
from ninja import Header, Query, Router, Schema
from pydantic import ConfigDict, Field, create_model

from catalog.downloads import revision_download
from catalog.export import price_text
from catalog.items import VALUE_FIELDS, Item
from catalog.models import CatalogItem, CatalogRevision, Supplier
from catalog.selectors import (
    revision_diff,
    item_provenance,
    revision_get_public,
    revision_items,
    revision_previous,
    supplier_get_public,
    suppliers_for_member,
)
from jobs.http import JSON, Open, PageOut, answers, caller, paginate, paging
from jobs.problems import Problem

MSG_NO_SUPPLIER = "No supplier with this id exists in your workspaces."
MSG_NO_REVISION = "No revision with this id exists in your workspaces."
MSG_NOT_THIS_SUPPLIERS = "`{name}` is not a revision of this supplier."
MSG_NOT_ACCEPTABLE = "This resource is available as {types}."
MSG_METHOD = "Use GET."

CSV = "text/csv"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
MEDIA_TYPES = {"json": JSON, "csv": CSV, "xlsx": XLSX}
PAGE_SIZE = 50
PAGE_SIZE_MAX = 500
# Part of every ETag: bump it when a representation changes, so clients
# holding an old ETag get the new form instead of a 304.
REPRESENTATION = "2"  # 2: items carry `provenance`; exports its column
REVISION_CACHE_CONTROL = "private, no-cache"
VARY = "Accept, Authorization, Cookie"


# --- shapes ----------------------------------------------------------------------


class FieldProvenance(Open):
    model_config = ConfigDict(title="FieldProvenance", extra="allow")

    source: Literal["extracted", "reviewer"]
    by: str | None = Field(None, description="The reviewer's username (source reviewer).")
    at: str | None = Field(None, description="When the reviewer set it, ISO 8601.")
    extracted: str | int | float | None = Field(None, description="The value the extractor gave.")


class _PublishedItem(Open):
    model_config = ConfigDict(title="CatalogItem", extra="allow")


# A published item: the item's values (catalog.items.Item), each with a
# currency and its price as the supplier wrote it, the unit's code, and the
# row it was read from.
_PUBLISHED = {
    "currency": (str, Field(description="ISO 4217.")),
    "unit_price": (
        str,
        Field(
            description='A decimal, as text, with the decimals the supplier gave ("12.50", "0.125", "12").'
        ),
    ),
}
CatalogItemOut = create_model(
    "CatalogItemOut",
    __base__=_PublishedItem,
    **{
        name: _PUBLISHED.get(name, (Item.model_fields[name].annotation, Item.model_fields[name]))
        for name in VALUE_FIELDS
    },
    unit_code=(
        str | None,
        Field(None, description="The UN/CEFACT Recommendation 20 code of the unit, when known."),
    ),
    source=(
        dict[str, str | int],
        Field(description="{sheet, row}: where the item was read; `column` too for a price matrix's cell."),
    ),
    provenance=(
        dict[str, FieldProvenance],
        Field(
            description="Per field (sku, description, unit, pack_size, unit_price, currency): "
            "extracted from the sheet, or set by a reviewer (who, when, and the "
            "value that was extracted)."
        ),
    ),
)


class SupplierOut(Open):
    model_config = ConfigDict(title="Supplier", extra="allow")

    id: UUID
    name: str
    workspace: str
    current_revision_id: UUID | None
    item_count: int = Field(description="Items in the current revision (0 without one).")
    published_at: datetime | None = Field(description="When the current revision was published.")
    links: dict[str, str]


class SupplierPage(PageOut):
    results: list[SupplierOut]


class RevisionOut(Open):
    model_config = ConfigDict(title="Revision", extra="allow")

    id: UUID
    supplier_id: UUID | None
    supplier_name: str | None
    workspace: str
    number: int = Field(description="1, 2, 3 ... in order of publication, per supplier.")
    job_id: UUID
    published_at: datetime
    approved_by: str | None
    item_count: int
    previous_revision_id: UUID | None = Field(
        description="The supplier's revision published just before this one."
    )
    links: dict[str, str]


class ItemPage(PageOut):
    supplier_id: UUID | None
    revision_id: UUID | None
    results: list[CatalogItemOut]


class ChangedItem(Open):
    sku: str
    fields: list[str] = Field(description="The fields whose value changed.")
    old: CatalogItemOut
    new: CatalogItemOut


class Changes(Open):
    supplier_id: UUID
    since: UUID | None = Field(description="The revision compared from (null: from nothing).")
    revision_id: UUID | None = Field(description="The current revision, compared to.")
    added: list[CatalogItemOut]
    removed: list[CatalogItemOut]
    changed: list[ChangedItem]
    unchanged: int


Paging = paging(default=PAGE_SIZE, maximum=PAGE_SIZE_MAX)
SEARCH_MAX = 200


class ItemsQuery(Paging):
    sku: str | None = Field(None, max_length=SEARCH_MAX, description="Only items with exactly this SKU.")
    q: str | None = Field(
        None, max_length=SEARCH_MAX, description="Only items whose SKU or description contains this text."
    )
    format: Literal["json", "csv", "xlsx"] | None = Field(
        None, description="Instead of the Accept header. CSV and XLSX hold the whole revision."
    )


class SupplierItemsQuery(ItemsQuery):
    format: Literal["json"] | None = Field(None, description="Instead of the Accept header.")
    revision: UUID | None = Field(None, description="An older revision of this supplier.")


class ChangesQuery(Schema):
    since: UUID | None = Field(
        None, description="The revision you hold; without it every current item is added."
    )


class FormatQuery(Schema):
    format: Literal["json", "csv", "xlsx"] | None = Field(None, description="Instead of the Accept header.")


ETAG_HEADERS = {"ETag": "Names this answer.", "Cache-Control": REVISION_CACHE_CONTROL}
NOT_MODIFIED = "Not modified: the ETag you sent still names this answer."
IF_NONE_MATCH = "An ETag from an earlier answer: 304 if it still holds."
PAGE_PAST_END = "A page past the last (`/problems/page-out-of-range`, with `last_page`)."
# OpenAPI 3.1: text is a string; binary content is described by its media type alone.
SPREADSHEETS = {CSV: {"schema": {"type": "string"}}, XLSX: {}}


# --- representations -------------------------------------------------------------


def _number(value: Decimal | None) -> float | int | None:
    if value is None:
        return None
    return int(value) if value == value.to_integral_value() else float(value)


def item_json(item: CatalogItem | dict) -> dict:
    get = item.get if isinstance(item, dict) else lambda name: getattr(item, name)
    return {
        "sku": get("sku"),
        "description": get("description"),
        "unit": get("unit"),
        "unit_code": get("unit_code") or None,
        "pack_size": _number(get("pack_size")),
        "unit_price": price_text(get("unit_price"), get("price_places")),
        "currency": get("currency"),
        "source": _source(get),
        "provenance": item_provenance(get("provenance")),
    }


def _source(get) -> dict:
    """{sheet, row}, and the column of a price matrix's cell."""
    source = {"sheet": get("source_sheet"), "row": get("source_row")}
    if get("source_column"):
        source["column"] = get("source_column")
    return source


def supplier_json(supplier: Supplier) -> dict:
    current = supplier.current_revision
    links = {
        "self": reverse("api:supplier", args=[supplier.public_id]),
        "items": reverse("api:supplier-items", args=[supplier.public_id]),
        "changes": reverse("api:supplier-changes", args=[supplier.public_id]),
    }
    if current is not None:
        links["revision"] = reverse("api:revision", args=[current.public_id])
    return {
        "id": str(supplier.public_id),
        "name": supplier.name,
        "workspace": supplier.workspace.slug,
        "current_revision_id": str(current.public_id) if current else None,
        "item_count": current.item_count if current else 0,
        "published_at": current.published_at.isoformat() if current else None,
        "links": links,
    }


def revision_json(revision: CatalogRevision) -> dict:
    previous = revision_previous(revision=revision)
    items = reverse("api:revision-items", args=[revision.public_id])
    return {
        "id": str(revision.public_id),
        "supplier_id": str(revision.supplier.public_id) if revision.supplier else None,
        "supplier_name": revision.supplier.name if revision.supplier else None,
        "workspace": revision.workspace.slug,
        "number": revision.number,
        "job_id": str(revision.job_id),
        "published_at": revision.published_at.isoformat(),
        "approved_by": revision.approved_by.get_username() if revision.approved_by else None,
        "item_count": revision.item_count,
        "previous_revision_id": str(previous.public_id) if previous else None,
        "links": {
            "self": reverse("api:revision", args=[revision.public_id]),
            "items": items,
            "csv": f"{items}?format=csv",
            "xlsx": f"{items}?format=xlsx",
        },
    }


# --- HTTP helpers ----------------------------------------------------------------


def _etag(*parts: object) -> str:
    digest = hashlib.sha256("\x1f".join([REPRESENTATION, *map(str, parts)]).encode()).hexdigest()
    return f'"{digest[:40]}"'


def _not_modified(header: str | None, etag: str) -> HttpResponse | None:
    """304 when If-None-Match names `etag` (weak comparison, RFC 9110 13.1.2)."""
    if not header:
        return None
    tags = [tag.removeprefix("W/") for tag in parse_etags(header)]
    if "*" in tags or etag in tags:
        return _revision_headers(HttpResponseNotModified(), etag)
    return None


def _revision_headers(response: HttpResponse, etag: str) -> HttpResponse:
    response["ETag"] = etag
    response["Cache-Control"] = REVISION_CACHE_CONTROL
    response["Vary"] = VARY
    return response


def _negotiate(request: HttpRequest, requested: str | None, offered: tuple[str, ...]) -> str:
    """`?format=` wins; else the Accept header; else JSON."""
    if requested:
        return requested
    preferred = request.get_preferred_type([MEDIA_TYPES[name] for name in offered])
    if preferred is None:
        types = ", ".join(MEDIA_TYPES[name] for name in offered)
        raise Problem(406, "not-acceptable", MSG_NOT_ACCEPTABLE.format(types=types))
    return next(name for name in offered if MEDIA_TYPES[name] == preferred)


def _supplier(request: HttpRequest, supplier_id: UUID) -> Supplier:
    try:
        return supplier_get_public(user=caller(request).user, public_id=supplier_id)
    except Supplier.DoesNotExist:
        raise Problem(404, "not-found", MSG_NO_SUPPLIER) from None


def _revision(request: HttpRequest, revision_id: UUID) -> CatalogRevision:
    try:
        return revision_get_public(user=caller(request).user, public_id=revision_id)
    except CatalogRevision.DoesNotExist:
        raise Problem(404, "not-found", MSG_NO_REVISION) from None


def _revision_of(supplier: Supplier, public_id: UUID, name: str) -> CatalogRevision:
    """A revision of this supplier named in the query; one of another
    supplier, of another workspace or of nobody is the same 404."""
    found = supplier.revisions.select_related("supplier", "workspace").filter(public_id=public_id).first()
    if found is None:
        raise Problem(404, "not-found", MSG_NOT_THIS_SUPPLIERS.format(name=name))
    return found


def _spreadsheet(revision: CatalogRevision, fmt: str) -> HttpResponse:
    return revision_download(revision, fmt)


def _items_answer(
    request: HttpRequest, revision: CatalogRevision | None, query: ItemsQuery, supplier: Supplier | None
) -> HttpResponse:
    items = (
        revision_items(revision=revision, query=query.q or "", sku=query.sku or "")
        if revision is not None
        else CatalogItem.objects.none()
    )
    page = paginate(request, items, page=query.page, page_size=query.page_size)
    return JsonResponse(
        {
            "supplier_id": str(supplier.public_id) if supplier else None,
            "revision_id": str(revision.public_id) if revision else None,
            **page,
            "results": [item_json(item) for item in page["results"]],
        }
    )


# --- views -----------------------------------------------------------------------

router = Router(tags=["catalog"])
NO_SUPPLIER = "No such supplier in your workspaces."


@router.get("/suppliers", response={200: SupplierPage}, url_name="suppliers", summary="List suppliers")
@answers(
    descriptions={
        200: "Your workspaces' suppliers, by workspace and name, each with its "
        "current revision and item count."
    },
    problems={404: PAGE_PAST_END},
)
def suppliers_collection(request: HttpRequest, query: Query[Paging]):
    page = paginate(
        request, suppliers_for_member(user=caller(request).user), page=query.page, page_size=query.page_size
    )
    return JsonResponse({**page, "results": [supplier_json(s) for s in page["results"]]})


@router.get("/suppliers/{uuid:id}", response={200: SupplierOut}, url_name="supplier", summary="A supplier")
@answers(descriptions={200: "The supplier and its current revision."}, problems={404: NO_SUPPLIER})
def supplier_detail(request: HttpRequest, id: UUID):
    return JsonResponse(supplier_json(_supplier(request, id)))


@router.get(
    "/suppliers/{uuid:id}/items",
    response={200: ItemPage, 304: None},
    url_name="supplier-items",
    summary="A supplier's items (current revision, or `?revision=`)",
)
@answers(
    descriptions={200: "One page of items, by SKU.", 304: NOT_MODIFIED},
    headers={200: ETAG_HEADERS, 304: ETAG_HEADERS},
    problems={
        404: f"{NO_SUPPLIER} Or `revision` is not one of its revisions, or a page past the last.",
        406: "The Accept header asks for something other than JSON.",
    },
)
def supplier_items(
    request: HttpRequest,
    id: UUID,
    query: Query[SupplierItemsQuery],
    if_none_match: str | None = Header(
        None, alias="If-None-Match", max_length=2000, description=IF_NONE_MATCH
    ),
):
    supplier = _supplier(request, id)
    _negotiate(request, query.format, ("json",))
    revision = (
        _revision_of(supplier, query.revision, "revision") if query.revision else supplier.current_revision
    )
    etag = _etag(
        "supplier-items",
        supplier.public_id,
        revision.public_id if revision else "-",
        query.page,
        query.page_size,
        query.sku or "",
        query.q or "",
    )
    return _not_modified(if_none_match, etag) or _revision_headers(
        _items_answer(request, revision, query, supplier), etag
    )


@router.get(
    "/suppliers/{uuid:id}/changes",
    response={200: Changes, 304: None},
    url_name="supplier-changes",
    summary="What changed since a revision",
)
@answers(
    descriptions={
        200: "Items added, removed and changed (old and new values) from `since` to the current revision.",
        304: NOT_MODIFIED,
    },
    headers={200: ETAG_HEADERS, 304: ETAG_HEADERS},
    problems={404: f"{NO_SUPPLIER} Or `since` is not one of its revisions."},
)
def supplier_changes(
    request: HttpRequest,
    id: UUID,
    query: Query[ChangesQuery],
    if_none_match: str | None = Header(
        None, alias="If-None-Match", max_length=2000, description=IF_NONE_MATCH
    ),
):
    supplier = _supplier(request, id)
    since = _revision_of(supplier, query.since, "since") if query.since else None
    current = supplier.current_revision
    etag = _etag(
        "changes",
        supplier.public_id,
        since.public_id if since else "-",
        current.public_id if current else "-",
    )
    cached = _not_modified(if_none_match, etag)
    if cached:
        return cached
    diff = revision_diff(old=since, new=current)
    return _revision_headers(
        JsonResponse(
            {
                "supplier_id": str(supplier.public_id),
                "since": str(since.public_id) if since else None,
                "revision_id": str(current.public_id) if current else None,
                "added": [item_json(item) for item in diff.added],
                "removed": [item_json(item) for item in diff.removed],
                "changed": [
                    {
                        "sku": change.sku,
                        "fields": list(change.fields),
                        "old": item_json(change.old),
                        "new": item_json(change.new),
                    }
                    for change in diff.changed
                ],
                "unchanged": diff.unchanged,
            }
        ),
        etag,
    )


@router.get(
    "/revisions/{uuid:id}",
    response={200: RevisionOut, 304: None},
    url_name="revision",
    summary="A revision (JSON, or all its items as CSV or XLSX)",
)
@answers(
    descriptions={200: "The revision; as CSV or XLSX, its items (formula-safe).", 304: NOT_MODIFIED},
    headers={200: ETAG_HEADERS, 304: ETAG_HEADERS},
    media={200: SPREADSHEETS},
    problems={
        404: "No such revision in your workspaces.",
        406: "The Accept header names none of JSON, CSV, XLSX.",
    },
)
def revision_detail(
    request: HttpRequest,
    id: UUID,
    query: Query[FormatQuery],
    if_none_match: str | None = Header(
        None, alias="If-None-Match", max_length=2000, description=IF_NONE_MATCH
    ),
):
    revision = _revision(request, id)
    fmt = _negotiate(request, query.format, ("json", "csv", "xlsx"))
    # The names in the JSON can be edited (a supplier renamed in admin): they
    # are part of what the answer is made of.
    etag = _etag(
        "revision",
        revision.public_id,
        fmt,
        revision.supplier.name if revision.supplier else "",
        revision.approved_by.get_username() if revision.approved_by else "",
    )
    cached = _not_modified(if_none_match, etag)
    if cached:
        return cached
    response = JsonResponse(revision_json(revision)) if fmt == "json" else _spreadsheet(revision, fmt)
    return _revision_headers(response, etag)


@router.get(
    "/revisions/{uuid:id}/items",
    response={200: ItemPage, 304: None},
    url_name="revision-items",
    summary="A revision's items (JSON pages, or CSV or XLSX)",
)
@answers(
    descriptions={
        200: "One page of items by SKU; as CSV or XLSX, every item (formula-safe).",
        304: NOT_MODIFIED,
    },
    headers={200: ETAG_HEADERS, 304: ETAG_HEADERS},
    media={200: SPREADSHEETS},
    problems={
        404: "No such revision in your workspaces, or a page past the last.",
        406: "The Accept header names none of JSON, CSV, XLSX.",
    },
)
def revision_items_view(
    request: HttpRequest,
    id: UUID,
    query: Query[ItemsQuery],
    if_none_match: str | None = Header(
        None, alias="If-None-Match", max_length=2000, description=IF_NONE_MATCH
    ),
):
    revision = _revision(request, id)
    fmt = _negotiate(request, query.format, ("json", "csv", "xlsx"))
    if fmt == "json":
        etag = _etag(
            "revision-items", revision.public_id, query.page, query.page_size, query.sku or "", query.q or ""
        )
    else:
        etag = _etag("revision-items", revision.public_id, fmt)
    cached = _not_modified(if_none_match, etag)
    if cached:
        return cached
    if fmt != "json":
        return _revision_headers(_spreadsheet(revision, fmt), etag)
    return _revision_headers(_items_answer(request, revision, query, revision.supplier), etag)
