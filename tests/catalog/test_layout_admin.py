"""Remembered supplier layouts in the admin: staff see them and delete them."""

from catalog.models import SupplierLayout
from catalog.services import supplier_get_or_create

MAPPING = {
    "sheets": [
        {
            "sheet": "Sheet1",
            "header_row": None,
            "columns": {
                "sku": "A",
                "description": "B",
                "unit": None,
                "pack_size": None,
                "unit_price": "D",
                "currency": None,
            },
        }
    ],
    "currency": "EUR",
}


def layout(workspace):
    supplier = supplier_get_or_create(workspace=workspace, name="Zorblat Trading")
    return SupplierLayout.objects.create(
        workspace=workspace,
        supplier=supplier,
        signature="f" * 64,
        sheet_names="Sheet1",
        mapping=MAPPING,
        sheet_signatures={"Sheet1": "e" * 64},
        approved_by_name="rey",
    )


def test_staff_see_remembered_layouts_with_their_mapping(admin_client, workspace):
    row = layout(workspace)
    listing = admin_client.get("/admin/catalog/supplierlayout/")
    assert listing.status_code == 200 and "Zorblat Trading" in listing.content.decode()
    page = admin_client.get(f"/admin/catalog/supplierlayout/{row.pk}/change/").content.decode()
    assert "Sheet1: header row none; sku A, description B, unit_price D" in page
    assert "currency EUR" in page


def test_staff_delete_a_remembered_layout(admin_client, workspace):
    row = layout(workspace)
    response = admin_client.post(f"/admin/catalog/supplierlayout/{row.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not SupplierLayout.objects.exists()


def test_layouts_cannot_be_added_by_hand(admin_client, workspace):
    assert admin_client.get("/admin/catalog/supplierlayout/add/").status_code == 403
