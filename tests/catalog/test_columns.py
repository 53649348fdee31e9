"""Column roles from content, the columns report, and a reviewer's mapping."""

import pytest

from catalog.extraction import MappingError, extract, mapping_errors
from catalog.reading import Sheet, Table


def table(*rows, name="Sheet1"):
    return Table(sheets=[Sheet(name=name, rows=[list(r) for r in rows])])


def roles(report: dict) -> dict:
    return {c["column"]: c["role"] for c in report["columns"] if c["role"] != "other"}


def test_report_gives_header_row_and_every_columns_role_evidence_and_confidence():
    ex = extract(table(["Title"], ["Code", "Name", "Price EUR"], ["A-1", "Blue widget", "2.50"],
                       ["A-2", "Red widget", "3.10"]))
    (report,) = ex.sheets
    assert report["header_row"] == 2
    assert roles(report) == {"A": "sku", "B": "description", "C": "unit_price"}
    assert all(c["evidence"] and 0 < c["confidence"] <= 1 for c in report["columns"])
    assert report["needs_confirmation"] == any(c["needs_confirmation"] for c in report["columns"])


def test_every_value_from_a_column_in_doubt_is_flagged_on_its_field():
    rows = [["Code", "Name", "Price EUR"]] + [[f"A-{n}", f"Widget number {n}", f"{n}.50"] for n in range(1, 9)]
    ex = extract(table(*rows))
    doubted = {c["role"] for c in ex.sheets[0]["columns"] if c["needs_confirmation"] and c["role"] != "other"}
    assert doubted
    for item in ex.items:
        flagged = {f["field"] for f in item["flags"] if f["code"] == "uncertain_column"}
        assert doubted <= flagged


def _probabilities(rows):
    from catalog.extraction.columns import column_probabilities

    return [p for p, _vetoes, _f in column_probabilities(rows[1:], len(rows[0]), rows[0])]


def test_a_constant_column_is_no_sku_and_no_description_whatever_its_header_says():
    rows = [["SKU", "Name", "Price"]] + [["ACME", f"Bolt size M{n}", f"{n}.25"] for n in range(3, 12)]
    constant = _probabilities(rows)[0]
    assert constant["sku"] == constant["description"] == 0


def test_a_running_row_number_a_year_or_a_percentage_is_no_price():
    rows = [["Price", "Price", "Price", "Name"]]
    rows += [[str(n), str(2000 + n), f"{n}%", f"Bolt size M{n}"] for n in range(1, 12)]
    assert [p["unit_price"] for p in _probabilities(rows)[:3]] == [0, 0, 0]


def test_a_link_is_no_description():
    rows = [["Description", "Price"]] + [[f"https://example.com/item/{n}", f"{n}.25"] for n in range(1, 9)]
    assert _probabilities(rows)[0]["description"] == 0


def test_two_plausible_price_columns_need_confirmation():
    rows = [["SKU", "Name", "Price EUR", "Price USD"]]
    rows += [[f"S{n}", f"Thing number {n}", f"{n}.10", f"{n}.30"] for n in range(1, 6)]
    ex = extract(table(*rows))
    assert ex.needs_confirmation
    price = next(c for c in ex.sheets[0]["columns"] if c["role"] == "unit_price")
    assert price["needs_confirmation"]
    assert all(any(f["code"] == "uncertain_column" and f["field"] == "unit_price" for f in i["flags"])
               for i in ex.items)


def test_mapping_is_taken_as_given_and_needs_no_confirmation():
    rows = [["K-100", "Hammer", "x", "12.40", "99"], ["K-101", "Saw", "y", "8.95", "98"]]
    mapping = {"sheets": [{"sheet": "Sheet1", "header_row": None, "columns": {
        "sku": "A", "description": "B", "unit": None, "pack_size": None, "unit_price": "E", "currency": None}}],
        "currency": "EUR"}
    ex = extract(table(*rows), mapping=mapping)
    assert [(i["sku"], i["unit_price"], i["currency"]) for i in ex.items] == [("K-100", "99", "EUR"), ("K-101", "98", "EUR")]
    assert not ex.needs_confirmation
    assert ex.sheets[0]["source"] == "reviewer"


def test_mapping_reads_only_the_sheets_it_lists():
    t = Table(sheets=[Sheet(name="A", rows=[["SKU", "Name", "Price"], ["1", "x", "2"]]),
                      Sheet(name="B", rows=[["SKU", "Name", "Price"], ["2", "y", "3"]])])
    mapping = {"sheets": [{"sheet": "B", "header_row": 1, "columns": {"sku": "A", "description": "B",
                                                                      "unit_price": "C"}}], "currency": None}
    ex = extract(t, mapping=mapping)
    assert [i["source"]["sheet"] for i in ex.items] == ["B"]
    assert [s["status"] for s in ex.sheets] == ["not selected", "read"]


@pytest.mark.parametrize("mapping, words", [
    ({"sheets": [{"sheet": "Sheet1", "header_row": 1, "columns": {"sku": "A"}}]}, "no price column"),
    ({"sheets": [{"sheet": "Sheet1", "header_row": 1, "columns": {"unit_price": "B"}}]}, "no description or SKU"),
    ({"sheets": [{"sheet": "Sheet1", "header_row": 1, "columns": {"sku": "A", "unit_price": "Q"}}]}, "does not exist"),
    ({"sheets": [{"sheet": "Nope", "header_row": 1, "columns": {}}]}, "no sheet"),
    ({"sheets": [{"sheet": "Sheet1", "header_row": 99, "columns": {"sku": "A", "unit_price": "B"}}]}, "header row"),
])
def test_impossible_mapping_is_explained(mapping, words):
    errors = mapping_errors(mapping, table(["SKU", "Price"], ["A", "1"]))
    assert any(words in e for e in errors)


def test_extract_refuses_a_mapping_without_price():
    mapping = {"sheets": [{"sheet": "Sheet1", "header_row": 1, "columns": {"sku": "A"}}]}
    with pytest.raises(MappingError):
        extract(table(["SKU", "Price"], ["A", "1"]), mapping=mapping)


def test_refusal_says_which_kind_and_that_a_reviewer_can_map_it():
    ex = extract(table(["Weight", "Zone 1", "Zone 2", "Zone 3"], ["do 1 kg", "4.10", "5.20", "6.30"],
                       ["do 5 kg", "5.10", "6.20", "7.30"], ["do 10 kg", "6.10", "7.20", "8.30"]))
    assert ex.items == []
    assert "rate card" in ex.refusal and "reviewer can still map" in ex.refusal
    assert ex.sheets[0]["status"] == "refused"
