"""Column mappings (pure): checking a mapping against a table, reading a
sheet with it, the columns report, and layout signatures. Sheets are
invented here by code."""

import pytest

from catalog.mapping import (
    MappingInvalid,
    column_index,
    column_letter,
    header_signature,
    layout_fits,
    mapping_parse,
    read_items,
)
from catalog.reading import Sheet, Table


def headerless(rows: int = 5, *, prefix: str = "K", name: str = "Sheet1") -> Table:
    """An item list with no header row: code, name, unit, price."""
    return Table(
        sheets=[
            Sheet(
                name=name,
                rows=[
                    [f"{prefix}-{100 + n}", f"Invented widget {n}", "piece", f"{n + 1}.25"]
                    for n in range(rows)
                ],
            )
        ]
    )


def unknown_words() -> Table:
    """A title, then a header in words no vocabulary knows, then items."""
    return Table(
        sheets=[
            Sheet(
                name="Lista",
                rows=[
                    ["Zorblat trading list"],
                    [],
                    ["Qux", "Frobnik", "Mensura", "Valoro"],
                    ["Q-1", "Blue gadget", "kg", "4,50"],
                    ["Q-2", "Red gadget", "kg", "5,75"],
                ],
            )
        ]
    )


def mapping(sheet="Sheet1", header_row=None, currency="EUR", **columns):
    cols = {
        "sku": "A",
        "description": "B",
        "unit": "C",
        "pack_size": None,
        "unit_price": "D",
        "currency": None,
    }
    cols.update(columns)
    return {"sheets": [{"sheet": sheet, "header_row": header_row, "columns": cols}], "currency": currency}


def test_column_letters_round_trip():
    assert [column_letter(i) for i in (0, 25, 26, 701)] == ["A", "Z", "AA", "ZZ"]
    assert [column_index(x) for x in ("A", "Z", "AA", "ZZ")] == [0, 25, 26, 701]


def given(data: dict) -> dict:
    return {**data, "set_by": "rey", "set_at": "2026-12-01T00:00:00+00:00"}


def test_a_headerless_sheet_read_with_a_mapping_gives_every_row_with_the_sheet_currency():
    from catalog.validation import validate_items

    table = headerless(3)
    result = read_items(table, given=given(mapping()))
    assert [
        (i["sku"], i["description"], i["unit"], i["unit_price"], i["currency"], i["source"]["row"])
        for i in result["items"]
    ] == [
        ("K-100", "Invented widget 0", "piece", "1.25", "EUR", 1),
        ("K-101", "Invented widget 1", "piece", "2.25", "EUR", 2),
        ("K-102", "Invented widget 2", "piece", "3.25", "EUR", 3),
    ]
    assert not any(i["flags"] for i in validate_items(result["items"], table))
    report = result["report"]
    assert report["layout"] == {
        "source": "reviewer",
        "approved_by": "rey",
        "approved_at": "2026-12-01T00:00:00+00:00",
    }
    assert report["needs_confirmation"] is False
    sheet = report["columns"][0]
    assert sheet["header_row"] is None and sheet["signature"] == header_signature(
        headerless(3).sheets[0], None
    )
    assert {c["column"]: c["role"] for c in sheet["columns"]} == {
        "A": "sku",
        "B": "description",
        "C": "unit",
        "D": "unit_price",
    }
    assert result["notes"][0] == "columns mapped by rey at 2026-12-01T00:00:00+00:00"


def test_without_a_mapping_a_headerless_sheet_is_inferred_and_needs_confirmation():
    result = read_items(headerless(3))
    assert result["report"]["layout"]["source"] == "inferred"
    assert result["report"]["needs_confirmation"] is True


def test_unknown_header_words_read_with_a_mapping_skip_the_title_and_header_rows():
    table = unknown_words()
    result = read_items(table, given=given(mapping("Lista", 3, currency=None)))
    assert [(i["sku"], i["unit_price"]) for i in result["items"]] == [("Q-1", "4.5"), ("Q-2", "5.75")]


def test_only_the_sheets_the_mapping_names_are_read():
    table = Table(sheets=[*headerless(2).sheets, *headerless(2, prefix="Z", name="Old").sheets])
    result = read_items(table, given=given(mapping()))
    assert {i["source"]["sheet"] for i in result["items"]} == {"Sheet1"}


def remembered(table: Table, **extra) -> dict:
    return {
        "id": 7,
        "mapping": mapping_parse(mapping(), table),
        "sheet_names": "Sheet1",
        "sheet_signatures": {"Sheet1": header_signature(table.sheets[0], None)},
        "approved_by": "rey",
        "approved_at": "2026-12-01T00:00:00+00:00",
        **extra,
    }


def test_a_remembered_layout_that_fits_reads_the_next_sheet_and_says_so():
    layout = remembered(headerless(4))
    result = read_items(headerless(6, prefix="N"), remembered=[layout])
    assert result["report"]["layout"] == {
        "source": "remembered",
        "approved_by": "rey",
        "approved_at": "2026-12-01T00:00:00+00:00",
        "layout_id": 7,
    }
    assert result["report"]["needs_confirmation"] is False
    assert [i["currency"] for i in result["items"]] == ["EUR"] * 6
    assert result["notes"][0].startswith("read with the layout remembered for this supplier")


def test_a_changed_layout_is_inferred_and_the_notes_say_the_remembered_one_no_longer_fits():
    layout = remembered(headerless(4))
    wider = Table(sheets=[Sheet("Sheet1", [r + ["spare"] for r in headerless(4).sheets[0].rows])])
    result = read_items(wider, remembered=[layout])
    assert result["report"]["layout"]["source"] == "inferred"
    assert "differs from the 1 remembered for this supplier" in result["notes"][0]


def test_a_reviewers_mapping_wins_over_a_remembered_layout():
    table = headerless(3)
    result = read_items(table, given=given(mapping(currency="USD")), remembered=[remembered(table)])
    assert result["report"]["layout"]["source"] == "reviewer"
    assert {i["currency"] for i in result["items"]} == {"USD"}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"unit_price": None}, "name the unit price column"),
        ({"sku": None, "description": None}, "description column or a SKU column"),
        ({"unit": "H"}, "unit column H does not exist"),
        ({"unit": "3"}, "is not a column letter"),
        ({"unit": "B"}, "column B is given two roles"),
        ({"weight": "C"}, "unknown role 'weight'"),
    ],
)
def test_an_impossible_mapping_is_refused_with_a_specific_reason(change, message):
    with pytest.raises(MappingInvalid) as caught:
        mapping_parse(mapping(**change), headerless())
    assert message in " ".join(caught.value.errors)


@pytest.mark.parametrize(
    "data, message",
    [
        (mapping(sheet="Nope"), "Sheet 'Nope' does not exist"),
        (mapping(header_row=99), "`header_row` must be a row number from 1 to 5"),
        (mapping(currency="XYZ"), "not an active ISO 4217 code"),
        ({"sheets": []}, "at least one sheet"),
        ([], "must be a JSON object"),
    ],
)
def test_a_mapping_that_does_not_fit_the_table_says_why(data, message):
    with pytest.raises(MappingInvalid) as caught:
        mapping_parse(data, headerless())
    assert message in " ".join(caught.value.errors)


def test_the_signature_ignores_case_and_accents_but_not_columns_or_sheet_name():
    base = header_signature(Sheet("S", [["Réf", "Nom", "Prix"], ["1", "a", "2"]]), 1)
    assert header_signature(Sheet("S", [["REF", "nom", "prix "], ["9", "b", "3"]]), 1) == base
    assert header_signature(Sheet("S", [["Ref", "Nom", "Prix", "Extra"]]), 1) != base
    assert header_signature(Sheet("T", [["Ref", "Nom", "Prix"]]), 1) != base


def test_a_headerless_signature_follows_the_kind_of_content_of_each_column():
    first = headerless(5).sheets[0]
    same_shape = headerless(8, prefix="P").sheets[0]
    swapped = Sheet("Sheet1", [[r[0], r[1], r[3], r[2]] for r in first.rows])
    assert header_signature(first, None) == header_signature(same_shape, None)
    assert header_signature(first, None) != header_signature(swapped, None)


def test_a_remembered_layout_fits_only_a_table_with_the_same_signatures():
    table = headerless(5)
    parsed = mapping_parse(mapping(), table)
    signatures = {"Sheet1": header_signature(table.sheets[0], None)}
    assert layout_fits(parsed, signatures, headerless(9, prefix="N"))
    wider = Table(sheets=[Sheet("Sheet1", [r + ["x"] for r in table.sheets[0].rows])])
    assert not layout_fits(parsed, signatures, wider)
    assert not layout_fits(parsed, signatures, headerless(5, name="Other"))
