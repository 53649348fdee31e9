from django.urls import path

from catalog import views

app_name = "catalog"

urlpatterns = [
    path("", views.index, name="index"),
    path("suppliers/<int:supplier_id>/", views.supplier, name="supplier"),
    path("revisions/<int:revision_id>/", views.revision, name="revision"),
    path("revisions/<int:revision_id>/export.csv", views.export_csv, name="export_csv"),
    path("revisions/<int:revision_id>/export.xlsx", views.export_xlsx, name="export_xlsx"),
    path("diff/", views.diff, name="diff"),
]
