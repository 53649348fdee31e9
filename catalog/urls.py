from django.urls import path

from catalog import views

app_name = "catalog"

urlpatterns = [
    path("", views.index, name="index"),
    path("suppliers/<uuid:supplier_id>/", views.supplier, name="supplier"),
    path("revisions/<uuid:revision_id>/", views.revision, name="revision"),
    path("revisions/<uuid:revision_id>/export.csv", views.export_csv, name="export_csv"),
    path("revisions/<uuid:revision_id>/export.xlsx", views.export_xlsx, name="export_xlsx"),
    path("diff/", views.diff, name="diff"),
    # Addresses of the integer-id days: moved for good to the public ids.
    path("suppliers/<int:pk>/", views.legacy_supplier),
    path("revisions/<int:pk>/", views.legacy_revision, {"target": "catalog:revision"}),
    path("revisions/<int:pk>/export.csv", views.legacy_revision, {"target": "catalog:export_csv"}),
    path("revisions/<int:pk>/export.xlsx", views.legacy_revision, {"target": "catalog:export_xlsx"}),
]
