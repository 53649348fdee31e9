"""The catalog read API under /api/ (included before the jobs API, whose
last route answers every other address with a problem+json 404)."""

from django.urls import path

from catalog import read_api

urlpatterns = [
    path("suppliers", read_api.suppliers_collection, name="suppliers"),
    path("suppliers/<uuid:id>", read_api.supplier_detail, name="supplier"),
    path("suppliers/<uuid:id>/items", read_api.supplier_items, name="supplier-items"),
    path("suppliers/<uuid:id>/changes", read_api.supplier_changes, name="supplier-changes"),
    path("revisions/<uuid:id>", read_api.revision_detail, name="revision"),
    path("revisions/<uuid:id>/items", read_api.revision_items_view, name="revision-items"),
]
