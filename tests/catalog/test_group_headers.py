"""A header word merged across the columns of a lower header row (a group:
"Price" over "Box" and "Pallet") stands over each of them, a word merged over
empty cells of the header's last row stands over each of those, and a sheet
whose header names several price columns has its price in doubt."""

import io

import openpyxl

from catalog.extraction import extract
from catalog.extraction.layout import find_header, header_labels
from catalog.reading import Sheet, Table, read_bytes
from tests.catalog.formatgen import ods_bytes, ods_cell, ods_row, xls_bytes

ROWS = [
    ["Name", "Price", None],
    [None, "Box", "Pallet"],
    ["Nails 40 mm", 4.5, 410],
    ["Nails 60 mm", 5.25, 480],
    ["Screws 4x40", 7.75, 700],
]


def _xlsx(rows, merges) -> bytes:
    book = openpyxl.Workbook()
    for row in rows:
        book.active.append(row)
    for ref in merges:
        book.active.merge_cells(ref)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _price_doubt(table: Table) -> tuple[list[str], set[str]]:
    """(the rules' doubts about the price, the fields the first item is flagged on)."""
    got = extract(table, model_doubt=False)
    doubts = [d for d in got.sheets[0]["doubts"] if "price" in d]
    return doubts, {f.get("field") for f in got.items[0].get("flags", [])}


def _ods(rows) -> bytes:
    """ROWS as an ODS, "Price" spanning its two columns."""
    first = ods_row([ods_cell("Name"), ods_cell("Price", span=(1, 2)), "<table:covered-table-cell/>"])
    rest = "".join(ods_row([ods_cell(v) for v in row]) for row in rows[1:])
    return ods_bytes({"S": first + rest})


def test_the_readers_keep_a_range_merged_across_columns_near_the_top():
    xlsx = read_bytes(_xlsx(ROWS, ["B1:C1"]), filename="p.xlsx").sheets[0]
    xls = read_bytes(xls_bytes({"S": ROWS}, merges={"S": [(0, 0, 1, 2)]}), filename="p.xls").sheets[0]
    ods = read_bytes(_ods(ROWS), filename="p.ods").sheets[0]
    assert xlsx.spans == xls.spans == ods.spans == {(1, 1): 2}
    assert ods.rows[:2] == [["Name", "Price"], ["", "Box", "Pallet"]]


def test_the_merged_ranges_survive_the_tables_json():
    sheet = read_bytes(_xlsx(ROWS, ["B1:C1"]), filename="p.xlsx").sheets[0]
    again = Table.from_json(Table(sheets=[sheet]).to_json()).sheets[0]
    assert again.spans == {(1, 1): 2}


def test_a_group_word_stands_over_each_of_its_sub_columns():
    sheet = read_bytes(_xlsx(ROWS, ["B1:C1"]), filename="p.xlsx").sheets[0]
    assert find_header(sheet.rows, sheet.spans).labels == ["Name", "Price Box", "Price Pallet"]
    # Without the merge (a CSV of the same cells) the second line names nothing more.
    assert find_header(sheet.rows).labels == ["Name", "Price"]


def test_a_merged_title_over_the_whole_header_is_no_group():
    rows = [["Nails and screws"], ["Name", "Price"], ["Nails", "4.5"]]
    assert header_labels(rows, (1, 2), {(1, 0): 1}) == ["Nails and screws Name", "Price"]


def test_a_group_fills_only_columns_with_words_of_their_own_below():
    rows = [["Name", "Price", "", ""], ["", "Box", "", "Pallet"]]
    assert header_labels(rows, (1, 2), {(1, 1): 3}) == ["Name", "Price Box", "", "Price Pallet"]


def test_two_price_columns_under_one_group_put_the_price_in_doubt():
    merged = read_bytes(_xlsx(ROWS, ["B1:C1"]), filename="p.xlsx")
    assert _price_doubt(merged) == (["two plausible price columns: B and C"], {"unit_price"})
    # The same cells without the merge: one column is named price, the other nothing.
    unmerged = Table(sheets=[Sheet(name="Sheet", rows=merged.sheets[0].rows)])
    assert _price_doubt(unmerged) == ([], set())


def test_two_columns_the_header_names_price_are_in_doubt_however_far_apart_their_scores():
    rows = [
        ["Name", "Retail price", "Wholesale price"],
        ["Nails 40 mm", "4.50", "410"],
        ["Nails 60 mm", "5.25", "480"],
        ["Screws 4x40", "7.75", "700"],
    ]
    assert _price_doubt(Table(sheets=[Sheet(name="Sheet", rows=rows)])) == (
        ["two plausible price columns: B and C"],
        {"unit_price"},
    )


def test_a_sheet_keeps_a_bounded_number_of_merged_ranges_near_the_top():
    from catalog.readers.common import MAX_SPANS, ReadLimits, fill_merged

    merges = [(r, r, c, c + 1) for r in range(50) for c in range(0, 200, 2)]
    sheet = fill_merged(Sheet(name="S", rows=[["x"] * 200 for _ in range(60)]), merges, ReadLimits())
    assert len(merges) > MAX_SPANS and len(sheet.spans) == MAX_SPANS
    # Below the rows a header is looked for in, none is kept.
    assert fill_merged(Sheet(name="S", rows=[["x", "y"]] * 60), [(55, 55, 0, 1)], ReadLimits()).spans == {}


def test_a_range_wider_than_the_sheet_fills_only_the_columns_that_exist():
    rows = [["Name", "Price"], ["", "Box", "Pallet"]]
    assert header_labels(rows, (1, 2), {(1, 1): 16383}) == ["Name", "Price Box", "Price Pallet"]


NAMES_IN_B = [
    ["Name", None, None, "Size", "Price EUR", "Unit"],
    [None, "PVC pipe 20 mm", None, "20", "40.71", "m"],
    [None, "PVC pipe 25 mm", None, "25", "73.75", "m"],
    [None, "PVC pipe 32 mm", None, "32", "118.00", "m"],
    [None, "PVC elbow 20 mm", None, "20", "3.10", "pc"],
]


def test_a_word_merged_over_empty_header_cells_stands_over_each_of_them():
    rows = [["Name", "", "", "Size", "Price"]]
    assert header_labels(rows, (1,), {(1, 0): 2}) == ["Name", "Name", "Name", "Size", "Price"]
    # A title merged alone in its row stands over nothing; a range past the row stops at its end.
    assert header_labels([["Price list"]], (1,), {(1, 0): 5}) == ["Price list"]
    assert header_labels([["Size", "Name"]], (1,), {(1, 1): 9}) == ["Size", "Name"]


def test_names_under_a_merged_header_word_are_named_by_it():
    merged = extract(read_bytes(_xlsx(NAMES_IN_B, ["A1:C1"]), filename="p.xlsx"), model_doubt=None)
    columns = {c["column"]: c for c in merged.sheets[0]["columns"]}
    assert merged.sheets[0]["header_row"] == 1
    assert columns["B"]["role"] == "description" and columns["B"]["header"] == "Name"
    assert not any("names it" in d for d in merged.sheets[0]["doubts"])
    # The same cells without the merge: the word stands over an empty column, the names beside it.
    plain = extract(Table(sheets=[Sheet(name="S", rows=merged_rows())]), model_doubt=None)
    assert any("names it" in d for d in plain.sheets[0]["doubts"])


def merged_rows() -> list[list[str]]:
    return [["" if v is None else v for v in row] for row in NAMES_IN_B]
