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
import io
import zipfile
from datetime import datetime
from decimal import Decimal
from typing import Literal
from uuid import UUID

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified, JsonResponse
from django.urls import reverse
from django.utils.http import parse_etags, urlencode
from django.utils.text import slugify
from django.views.decorators.csrf import csrf_exempt
from pydantic import BaseModel, ConfigDict, Field

from catalog.export import price_text, rows_to_csv, rows_to_xlsx
from catalog.models import CatalogItem, CatalogRevision, Supplier
from catalog.selectors import (
    revision_diff,
    revision_export_rows,
    revision_get_public,
    revision_items,
    revision_previous,
    supplier_get_public,
    suppliers_for_member,
)
from jobs.api_schemas import Open
from accounts.auth import authenticate
from jobs.openapi import JSON, Answer, Body, empty, json_answer, operation, parse_query, problem
from jobs.problems import Problem, api_view

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
REPRESENTATION = "1"
REVISION_CACHE_CONTROL = "private, no-cache"
VARY = "Accept, Authorization, Cookie"


# --- shapes ----------------------------------------------------------------------


class CatalogItemOut(Open):
    model_config = ConfigDict(title="CatalogItem", extra="allow")

    sku: str
    description: str
    unit: str | None
    unit_code: str | None = Field(None, description="The UN/CEFACT Recommendation 20 code of the unit, when known.")
    pack_size: float | None
    unit_price: str = Field(description="A decimal, as text, with the decimals the supplier gave "
                                        "(\"12.50\", \"0.125\", \"12\").")
    currency: str
    source: dict[str, str | int] = Field(description="{sheet, row}: where the item was read; "
                                                     "`column` too for a price matrix's cell.")


class SupplierOut(Open):
    model_config = ConfigDict(title="Supplier", extra="allow")

    id: UUID
    name: str
    workspace: str
    current_revision_id: UUID | None
    item_count: int = Field(description="Items in the current revision (0 without one).")
    published_at: datetime | None = Field(description="When the current revision was published.")
    links: dict[str, str]


class SupplierPage(Open):
    results: list[SupplierOut]
    count: int
    next: str | None
    previous: str | None


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
        description="The supplier's revision published just before this one.")
    links: dict[str, str]


class ItemPage(Open):
    supplier_id: UUID | None
    revision_id: UUID | None
    results: list[CatalogItemOut]
    count: int
    next: str | None
    previous: str | None


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


class Paging(BaseModel):
    page: int = Field(1, ge=1)
    page_size: int = Field(PAGE_SIZE, ge=1, description=f"At most {PAGE_SIZE_MAX} (larger asks get that).")


class ItemsQuery(Paging):
    sku: str | None = Field(None, max_length=200, description="Only items with exactly this SKU.")
    q: str | None = Field(None, max_length=200,
                          description="Only items whose SKU or description contains this text.")
    format: Literal["json", "csv", "xlsx"] | None = Field(
        None, description="Instead of the Accept header. CSV and XLSX hold the whole revision.")


class SupplierItemsQuery(ItemsQuery):
    format: Literal["json"] | None = None
    revision: UUID | None = Field(None, description="An older revision of this supplier.")


class ChangesQuery(BaseModel):
    since: UUID | None = Field(
        None, description="The revision you hold; without it every current item is added.")


class FormatQuery(BaseModel):
    format: Literal["json", "csv", "xlsx"] | None = Field(None, description="Instead of the Accept header.")


NOT_MODIFIED = empty("Not modified: the ETag you sent still names this answer.",
                     ETag="The same ETag.", Cache_Control=REVISION_CACHE_CONTROL)
ETAG_HEADER = {"If-None-Match": ("An ETag from an earlier answer: 304 if it still holds.", False)}
# OpenAPI 3.1: text is a string; binary content is described by its media type alone.
SPREADSHEETS = (Body(CSV, {"type": "string"}), Body(XLSX, None))


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
    }


def _source(get) -> dict:
    """{sheet, row}, and the column of a price matrix's cell."""
    source = {"sheet": get("source_sheet"), "row": get("source_row")}
    if get("source_column"):
        source["column"] = get("source_column")
    return source


def supplier_json(supplier: Supplier) -> dict:
    current = supplier.current_revision
    links = {"self": reverse("catalog-api:supplier", args=[supplier.public_id]),
             "items": reverse("catalog-api:supplier-items", args=[supplier.public_id]),
             "changes": reverse("catalog-api:supplier-changes", args=[supplier.public_id])}
    if current is not None:
        links["revision"] = reverse("catalog-api:revision", args=[current.public_id])
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
    items = reverse("catalog-api:revision-items", args=[revision.public_id])
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
        "links": {"self": reverse("catalog-api:revision", args=[revision.public_id]),
                  "items": items, "csv": f"{items}?format=csv", "xlsx": f"{items}?format=xlsx"},
    }


def deterministic_xlsx(data: bytes, when: datetime) -> bytes:
    """The same workbook with every timestamp set to `when`: openpyxl stamps
    the save time into the zip entries and the document properties, which
    would give each download of one revision different bytes (and a strong
    ETag must name exactly one byte sequence)."""
    stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ").encode()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for entry in source.infolist():
            content = source.read(entry.filename)
            if entry.filename == "docProps/core.xml":
                content = _restamp(content, stamp)
            info = zipfile.ZipInfo(entry.filename, date_time=when.timetuple()[:6])
            info.compress_type = zipfile.ZIP_DEFLATED
            target.writestr(info, content)
    return out.getvalue()


def _restamp(core_xml: bytes, stamp: bytes) -> bytes:
    for tag in (b"dcterms:created", b"dcterms:modified"):
        start = core_xml.find(b"<" + tag)
        if start < 0:
            continue
        open_end = core_xml.find(b">", start) + 1
        close = core_xml.find(b"</" + tag + b">", open_end)
        if open_end > 0 and close > 0:
            core_xml = core_xml[:open_end] + stamp + core_xml[close:]
    return core_xml


# --- HTTP helpers ----------------------------------------------------------------


def _etag(*parts: object) -> str:
    digest = hashlib.sha256("\x1f".join([REPRESENTATION, *map(str, parts)]).encode()).hexdigest()
    return f'"{digest[:40]}"'


def _not_modified(request: HttpRequest, etag: str) -> HttpResponse | None:
    """304 when If-None-Match names `etag` (weak comparison, RFC 9110 13.1.2)."""
    header = request.headers.get("If-None-Match")
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


def _page_size(query: Paging) -> int:
    return min(query.page_size, PAGE_SIZE_MAX)


def _page(request: HttpRequest, rows: QuerySet, query: Paging) -> tuple[list, int, str | None, str | None]:
    size = _page_size(query)
    count = rows.count()
    start = (query.page - 1) * size

    def link(number: int) -> str:
        params = request.GET.copy()
        params["page"] = str(number)
        params["page_size"] = str(size)
        return f"{request.path}?{urlencode(sorted(params.lists()), doseq=True)}"

    next_url = link(query.page + 1) if start + size < count else None
    previous = link(query.page - 1) if query.page > 1 else None
    return list(rows[start:start + size]), count, next_url, previous


def _allow_get(request: HttpRequest) -> None:
    if request.method not in ("GET", "HEAD"):
        raise Problem(405, "method-not-allowed", MSG_METHOD, headers={"Allow": "GET, HEAD"})


def _supplier(request: HttpRequest, supplier_id: UUID) -> Supplier:
    caller = authenticate(request)
    try:
        return supplier_get_public(user=caller.user, public_id=supplier_id)
    except Supplier.DoesNotExist:
        raise Problem(404, "not-found", MSG_NO_SUPPLIER) from None


def _revision(request: HttpRequest, revision_id: UUID) -> CatalogRevision:
    caller = authenticate(request)
    try:
        return revision_get_public(user=caller.user, public_id=revision_id)
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
    rows = revision_export_rows(revision=revision)
    if fmt == "csv":
        response = HttpResponse(rows_to_csv(rows), content_type=f"{CSV}; charset=utf-8")
    else:
        response = HttpResponse(deterministic_xlsx(rows_to_xlsx(rows), revision.published_at),
                                content_type=XLSX)
    base = slugify(revision.supplier.name if revision.supplier else revision.workspace.slug) or "catalog"
    response["Content-Disposition"] = f'attachment; filename="{base}-revision-{revision.number}.{fmt}"'
    return response


def _items_answer(request: HttpRequest, revision: CatalogRevision | None, query: ItemsQuery,
                  supplier: Supplier | None) -> HttpResponse:
    items = revision_items(revision=revision, query=query.q or "", sku=query.sku or "") \
        if revision is not None else CatalogItem.objects.none()
    rows, count, next_url, previous = _page(request, items, query)
    return JsonResponse({
        "supplier_id": str(supplier.public_id) if supplier else None,
        "revision_id": str(revision.public_id) if revision else None,
        "results": [item_json(item) for item in rows],
        "count": count,
        "next": next_url,
        "previous": previous,
    })


# --- views -----------------------------------------------------------------------


@operation("GET", summary="List suppliers", tags=("catalog",), query=Paging, answers={
    200: json_answer(SupplierPage, "Your workspaces' suppliers, by workspace and name, each with "
                                   "its current revision and item count."),
    400: problem("A bad page number."),
})
@csrf_exempt
@api_view
def suppliers_collection(request: HttpRequest) -> HttpResponse:
    _allow_get(request)
    caller = authenticate(request)
    query = parse_query(request, Paging)
    rows, count, next_url, previous = _page(request, suppliers_for_member(user=caller.user), query)
    return JsonResponse({"results": [supplier_json(s) for s in rows], "count": count,
                         "next": next_url, "previous": previous})


@operation("GET", summary="A supplier", tags=("catalog",), answers={
    200: json_answer(SupplierOut, "The supplier and its current revision."),
    404: problem("No such supplier in your workspaces."),
})
@csrf_exempt
@api_view
def supplier_detail(request: HttpRequest, id: UUID) -> HttpResponse:
    _allow_get(request)
    return JsonResponse(supplier_json(_supplier(request, id)))


@operation("GET", summary="A supplier's items (current revision, or `?revision=`)", tags=("catalog",),
           query=SupplierItemsQuery, headers=ETAG_HEADER, answers={
               200: json_answer(ItemPage, "One page of items, by SKU.", ETag="Names this answer.",
                                Cache_Control=REVISION_CACHE_CONTROL),
               304: NOT_MODIFIED,
               400: problem("A bad parameter."),
               404: problem("No such supplier in your workspaces, or `revision` is not one of its "
                            "revisions."),
               406: problem("The Accept header asks for something other than JSON."),
           })
@csrf_exempt
@api_view
def supplier_items(request: HttpRequest, id: UUID) -> HttpResponse:
    _allow_get(request)
    supplier = _supplier(request, id)
    query = parse_query(request, SupplierItemsQuery)
    _negotiate(request, query.format, ("json",))
    revision = (_revision_of(supplier, query.revision, "revision") if query.revision
                else supplier.current_revision)
    etag = _etag("supplier-items", supplier.public_id, revision.public_id if revision else "-",
                 query.page, _page_size(query), query.sku or "", query.q or "")
    return _not_modified(request, etag) or _revision_headers(
        _items_answer(request, revision, query, supplier), etag)


@operation("GET", summary="What changed since a revision", tags=("catalog",), query=ChangesQuery,
           headers=ETAG_HEADER, answers={
               200: json_answer(Changes, "Items added, removed and changed (old and new values) "
                                         "from `since` to the current revision.",
                                ETag="Names this answer.", Cache_Control=REVISION_CACHE_CONTROL),
               304: NOT_MODIFIED,
               400: problem("`since` is not an id."),
               404: problem("No such supplier in your workspaces, or `since` is not one of its "
                            "revisions."),
           })
@csrf_exempt
@api_view
def supplier_changes(request: HttpRequest, id: UUID) -> HttpResponse:
    _allow_get(request)
    supplier = _supplier(request, id)
    query = parse_query(request, ChangesQuery)
    since = _revision_of(supplier, query.since, "since") if query.since else None
    current = supplier.current_revision
    etag = _etag("changes", supplier.public_id, since.public_id if since else "-",
                 current.public_id if current else "-")
    cached = _not_modified(request, etag)
    if cached:
        return cached
    diff = revision_diff(old=since, new=current)
    return _revision_headers(JsonResponse({
        "supplier_id": str(supplier.public_id),
        "since": str(since.public_id) if since else None,
        "revision_id": str(current.public_id) if current else None,
        "added": [item_json(item) for item in diff.added],
        "removed": [item_json(item) for item in diff.removed],
        "changed": [{"sku": change.sku, "fields": list(change.fields), "old": item_json(change.old),
                     "new": item_json(change.new)} for change in diff.changed],
        "unchanged": diff.unchanged,
    }), etag)


@operation("GET", summary="A revision (JSON, or all its items as CSV or XLSX)", tags=("catalog",),
           query=FormatQuery, headers=ETAG_HEADER, answers={
               200: Answer("The revision; as CSV or XLSX, its items (formula-safe).",
                           (Body(JSON, RevisionOut), *SPREADSHEETS),
                           {"ETag": "Names this answer.", "Cache-Control": REVISION_CACHE_CONTROL}),
               304: NOT_MODIFIED,
               404: problem("No such revision in your workspaces."),
               406: problem("The Accept header names none of JSON, CSV, XLSX."),
           })
@csrf_exempt
@api_view
def revision_detail(request: HttpRequest, id: UUID) -> HttpResponse:
    _allow_get(request)
    revision = _revision(request, id)
    query = parse_query(request, FormatQuery)
    fmt = _negotiate(request, query.format, ("json", "csv", "xlsx"))
    # The names in the JSON can be edited (a supplier renamed in admin): they
    # are part of what the answer is made of.
    etag = _etag("revision", revision.public_id, fmt, revision.supplier.name if revision.supplier else "",
                 revision.approved_by.get_username() if revision.approved_by else "")
    cached = _not_modified(request, etag)
    if cached:
        return cached
    response = JsonResponse(revision_json(revision)) if fmt == "json" else _spreadsheet(revision, fmt)
    return _revision_headers(response, etag)


@operation("GET", summary="A revision's items (JSON pages, or CSV or XLSX)", tags=("catalog",),
           query=ItemsQuery, headers=ETAG_HEADER, answers={
               200: Answer("One page of items by SKU; as CSV or XLSX, every item (formula-safe).",
                           (Body(JSON, ItemPage), *SPREADSHEETS),
                           {"ETag": "Names this answer.", "Cache-Control": REVISION_CACHE_CONTROL}),
               304: NOT_MODIFIED,
               400: problem("A bad parameter."),
               404: problem("No such revision in your workspaces."),
               406: problem("The Accept header names none of JSON, CSV, XLSX."),
           })
@csrf_exempt
@api_view
def revision_items_view(request: HttpRequest, id: UUID) -> HttpResponse:
    _allow_get(request)
    revision = _revision(request, id)
    query = parse_query(request, ItemsQuery)
    fmt = _negotiate(request, query.format, ("json", "csv", "xlsx"))
    if fmt == "json":
        etag = _etag("revision-items", revision.public_id, query.page, _page_size(query),
                     query.sku or "", query.q or "")
    else:
        etag = _etag("revision-items", revision.public_id, fmt)
    cached = _not_modified(request, etag)
    if cached:
        return cached
    if fmt != "json":
        return _revision_headers(_spreadsheet(revision, fmt), etag)
    return _revision_headers(_items_answer(request, revision, query, revision.supplier), etag)
