"""Suppliers are matched by name within a workspace."""

from catalog.services import supplier_get_or_create


def test_supplier_names_match_regardless_of_case_and_spaces(workspace, other_workspace):
    first = supplier_get_or_create(workspace=workspace, name="Acme  Fasteners ")
    assert first.name == "Acme Fasteners"
    assert supplier_get_or_create(workspace=workspace, name="ACME fasteners") == first
    assert supplier_get_or_create(workspace=other_workspace, name="acme fasteners") != first
