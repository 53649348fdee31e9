"""Catalog pages: suppliers and their current revision, items with search,
revision history, the diff between two revisions, and exports. Members see
their own workspaces only; anything else is a 404 like an unknown id.

Suppliers and revisions are addressed by their public ids; the old integer
addresses answer a permanent redirect, to members only (anyone else gets
the 404, so a redirect never discloses an id)."""

import uuid

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from catalog.downloads import revision_download
from catalog.models import CatalogRevision, Supplier
from catalog.selectors import (
    revision_diff,
    revision_get,
    revision_get_public,
    revision_items,
    revision_previous,
    revisions_without_supplier,
    supplier_get,
    supplier_get_public,
    supplier_revisions,
    suppliers_for_member,
)

ITEMS_PAGE_SIZE = 100
MSG_NO_REVISION = "No such revision."
MSG_NO_SUPPLIER = "No such supplier."
MSG_OTHER_SUPPLIERS = (
    "Revisions {old} and {new} belong to different suppliers ({old_supplier} "
    "and {new_supplier}): only revisions of one supplier can be compared."
)


def _supplier(request: HttpRequest, supplier_id: uuid.UUID) -> Supplier:
    try:
        return supplier_get_public(user=request.user, public_id=supplier_id)
    except Supplier.DoesNotExist:
        raise Http404(MSG_NO_SUPPLIER) from None


def _revision(request: HttpRequest, revision_id) -> CatalogRevision:
    try:
        return revision_get_public(user=request.user, public_id=uuid.UUID(str(revision_id)))
    except (CatalogRevision.DoesNotExist, TypeError, ValueError):
        raise Http404(MSG_NO_REVISION) from None


def _legacy_revision(request: HttpRequest, pk) -> CatalogRevision:
    try:
        return revision_get(user=request.user, revision_id=int(pk))
    except (CatalogRevision.DoesNotExist, TypeError, ValueError):
        raise Http404(MSG_NO_REVISION) from None


@login_required
@require_GET
def legacy_supplier(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        found = supplier_get(user=request.user, supplier_id=pk)
    except Supplier.DoesNotExist:
        raise Http404(MSG_NO_SUPPLIER) from None
    return redirect("catalog:supplier", found.public_id, permanent=True)


@login_required
@require_GET
def legacy_revision(request: HttpRequest, pk: int, target: str) -> HttpResponse:
    return redirect(target, _legacy_revision(request, pk).public_id, permanent=True)


def _items_page(request: HttpRequest, revision: CatalogRevision | None) -> tuple[str, object]:
    query = request.GET.get("q", "").strip()
    if revision is None:
        return query, None
    items = revision_items(revision=revision, query=query)
    return query, Paginator(items, ITEMS_PAGE_SIZE).get_page(request.GET.get("page"))


@login_required
@require_GET
def index(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "catalog/index.html",
        {
            "suppliers": suppliers_for_member(user=request.user),
            "unsupplied": revisions_without_supplier(user=request.user)[:50],
        },
    )


@login_required
@require_GET
def supplier(request: HttpRequest, supplier_id: uuid.UUID) -> HttpResponse:
    found = _supplier(request, supplier_id)
    revision = found.current_revision
    query, items = _items_page(request, revision)
    revisions = list(supplier_revisions(supplier=found))
    return render(
        request,
        "catalog/supplier.html",
        {
            "supplier": found,
            "revision": revision,
            "items": items,
            "query": query,
            "revisions": revisions,
            "default_old": revisions[1].public_id if len(revisions) > 1 else None,
            "default_new": revisions[0].public_id if revisions else None,
        },
    )


@login_required
@require_GET
def revision(request: HttpRequest, revision_id: uuid.UUID) -> HttpResponse:
    found = _revision(request, revision_id)
    query, items = _items_page(request, found)
    return render(
        request,
        "catalog/revision.html",
        {
            "revision": found,
            "items": items,
            "query": query,
            "previous": revision_previous(revision=found),
            "is_current": found.supplier is not None and found.supplier.current_revision_id == found.pk,
        },
    )


@login_required
@require_GET
def diff(request: HttpRequest) -> HttpResponse:
    old_id, new_id = request.GET.get("old", ""), request.GET.get("new", "")
    if old_id.isdigit() or new_id.isdigit():
        # A comparison bookmarked with integer ids: the same one by public ids.
        ids = [
            (name, _legacy_revision(request, value).public_id if value.isdigit() else value)
            for name, value in (("old", old_id), ("new", new_id))
        ]
        return HttpResponsePermanentRedirect(f"{reverse('catalog:diff')}?{urlencode(ids)}")
    old = _revision(request, request.GET.get("old"))
    new = _revision(request, request.GET.get("new"))
    if old.supplier_id != new.supplier_id:
        refusal = MSG_OTHER_SUPPLIERS.format(
            old=old.number,
            new=new.number,
            old_supplier=old.supplier.name if old.supplier else "no supplier",
            new_supplier=new.supplier.name if new.supplier else "no supplier",
        )
        return render(request, "catalog/diff.html", {"refusal": refusal, "old": old, "new": new}, status=400)
    return render(request, "catalog/diff.html", {"diff": revision_diff(old=old, new=new)})


@login_required
@require_GET
def export_csv(request: HttpRequest, revision_id: uuid.UUID) -> HttpResponse:
    return revision_download(_revision(request, revision_id), "csv")


@login_required
@require_GET
def export_xlsx(request: HttpRequest, revision_id: uuid.UUID) -> HttpResponse:
    return revision_download(_revision(request, revision_id), "xlsx")
