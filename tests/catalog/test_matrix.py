"""Price matrices (catalog.extraction.matrix): recognized and proposed, read
one item per priced cell, checked when a reviewer maps one. Pure: no
database."""

import pytest

from catalog.extraction import extract
from catalog.extraction.matrix import Matrix, describe, matrix_parse, matrix_read, propose_matrix
from catalog.mapping import MappingInvalid, mapping_parse
from catalog.reading import Sheet, Table, read_bytes
from catalog.validation import validate_items
from tests.catalog import matrixgen


def table_of(gen) -> Table:
    return read_bytes(gen.data, filename=gen.filename)


def read_with_form(gen, **changes):
    table = table_of(gen)
    sheet = table.sheets[0]
    form, errors = matrix_parse({**gen.form, **changes}, sheet)
    assert errors == []
    return table, matrix_read(sheet, Matrix.from_json(form))


def cells(items) -> dict:
    return {(i["source"]["row"], i["source"]["column"]): (i["description"], i["unit_price"]) for i in items}


@pytest.mark.parametrize("shape", sorted(matrixgen.SHAPES))
def test_a_mapped_matrix_makes_one_item_per_priced_cell_described_by_its_labels(shape):
    gen = matrixgen.SHAPES[shape]()
    _table, got = read_with_form(gen)
    assert cells(got.items) == gen.expected
    assert {k: v for k, v in got.counts.items() if v and k != "priced"} == gen.skipped
    assert got.counts["priced"] == len(gen.expected)


@pytest.mark.parametrize("shape", sorted(matrixgen.SHAPES))
def test_matrix_items_cite_their_cells_and_validation_finds_each_price_there(shape):
    gen = matrixgen.SHAPES[shape]()
    table, got = read_with_form(gen)
    checked = validate_items(got.items, table)
    assert [f for i in checked for f in i["flags"] if f["code"] == "unsupported_source"] == []


def test_a_price_moved_out_of_its_cited_cell_is_an_unsupported_source():
    gen = matrixgen.service_by_zone()
    table, got = read_with_form(gen)
    item = {**got.items[0], "source": {**got.items[0]["source"], "column": "C"}}
    (checked,) = validate_items([item], table)
    assert {(f["code"], f["field"]) for f in checked["flags"]} >= {("unsupported_source", "unit_price")}


@pytest.mark.parametrize(
    "shape, body, labels",
    [
        ("width_by_height", "B3:F6", ["A"]),
        ("fragrance_by_size", "C2:E5", ["A", "B"]),
        ("service_by_zone", "B2:E4", ["A"]),
        ("euro_format_xlsx", "B2:D3", ["A"]),
    ],
)
def test_a_recognized_matrix_is_proposed_for_review_instead_of_refused(shape, body, labels):
    gen = getattr(matrixgen, shape)()
    result = extract(table_of(gen))
    assert result.refusal is None and result.needs_confirmation
    (report,) = result.sheets
    assert report["kind"] == "matrix" and report["source"] == "inferred"
    assert (report["matrix"]["body"], report["matrix"]["row_labels"]) == (body, labels)
    assert "price matrix was recognized" in report["doubts"][0]
    assert {(i["source"]["row"], i["source"]["column"]) for i in result.items} == set(gen.expected)
    # Every value hangs on the proposed mapping: each item is pointed at it field by field.
    for item in result.items:
        assert {(f["code"], f["field"]) for f in item["flags"]} >= {
            ("uncertain_column", "sku"),
            ("uncertain_column", "description"),
            ("uncertain_column", "unit_price"),
            ("uncertain_column", "currency"),
        }


def test_a_matrix_a_reviewer_mapped_carries_no_doubt_on_its_items():
    _table, got = read_with_form(matrixgen.width_by_height())
    assert got.items and not any(item.get("flags") for item in got.items)


def test_the_proposal_reads_the_sheets_own_labels_and_a_reviewer_adds_product_and_unit():
    gen = matrixgen.width_by_height()
    result = extract(table_of(gen))
    assert result.items[0]["description"] == "60 × 100"
    _table, got = read_with_form(gen)
    assert got.items[0]["description"] == "Roller blind, 60 × 100 cm"


def test_currency_comes_from_a_title_above_the_body_or_from_the_number_format():
    assert {i["currency"] for i in read_with_form(matrixgen.width_by_height())[1].items} == {"EUR"}
    assert {i["currency"] for i in read_with_form(matrixgen.euro_format_xlsx())[1].items} == {"EUR"}
    assert {i["currency"] for i in read_with_form(matrixgen.service_by_zone())[1].items} == {None}
    assert {
        i["currency"]
        for i in matrix_read(
            table_of(matrixgen.service_by_zone()).sheets[0],
            Matrix.from_json(matrixgen.service_by_zone().form),
            "CHF",
        ).items
    } == {"CHF"}


def test_a_rate_card_by_weight_and_zone_stays_refused_and_shows_the_matrix_a_reviewer_may_map():
    gen = matrixgen.rate_card()
    result = extract(table_of(gen))
    assert result.refusal and "rate card" in result.refusal and result.items == []
    assert result.sheets[0]["matrix"]["body"] == "B2:D4"


def test_a_rate_card_mapped_as_a_matrix_by_a_reviewer_becomes_items():
    gen = matrixgen.rate_card()
    table = table_of(gen)
    mapping = mapping_parse({"sheets": [{"sheet": "Sheet1", "matrix": gen.form}], "currency": "EUR"}, table)
    result = extract(table, mapping)
    assert len(result.items) == 9 and not result.needs_confirmation
    assert result.items[0]["description"] == "0-1 kg, Zone 1"


@pytest.mark.parametrize(
    "rows",
    [
        [
            ["SKU", "Name", "Price", "Retail", "Stock"],
            *[[f"K{n}", f"Widget {n}", "1.20", "1.50", "3"] for n in range(5)],
        ],
        [["Code", "Name", "Price"], *[[str(100 + n), f"Widget {n}", f"{n + 1}.25"] for n in range(5)]],
        [["Name", "2024", "2025", "2026"], *[[f"Widget {n}", "1", "0", "4"] for n in range(5)]],
        [["Name", "3 %", "6 %", "9 %"], *[[f"Widget {n}", "1.10", "1.05", "1.00"] for n in range(5)]],
    ],
)
def test_an_item_list_is_never_read_cell_by_cell(rows):
    result = extract(Table(sheets=[Sheet(name="Sheet1", rows=rows)]))
    assert all(s.get("kind") != "matrix" for s in result.sheets)
    assert propose_matrix(rows, header=(1,)) is None


def test_a_body_that_reaches_the_last_row_is_kept_open_for_the_suppliers_next_sheet():
    gen = matrixgen.width_by_height()
    form, errors = matrix_parse(gen.form, table_of(gen).sheets[0])
    assert errors == [] and form["body"] == "B3:F"
    longer = matrixgen.width_by_height(heights=(100, 120, 140, 160, 180, 200), seed=1)
    got = matrix_read(table_of(longer).sheets[0], Matrix.from_json(form))
    assert len(got.items) == len(longer.expected)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"body": "B3:Z6"}, "reaches outside the sheet"),
        ({"body": "B3:F60"}, "reaches outside the sheet"),
        ({"body": "B3"}, "is not a range"),
        ({"body": "F6:B3"}, "is not a range"),
        ({"column_header_rows": [4]}, "is inside the body"),
        ({"column_header_rows": [2], "body": "B3:F4"}, None),
        ({"column_header_rows": [5], "body": "B3:F4"}, "is below the body"),
        ({"column_header_rows": []}, "`column_header_rows` must list"),
        ({"column_header_rows": [0]}, "`column_header_rows` must list"),
        ({"row_labels": ["C"]}, "row label column C is inside the body"),
        ({"row_labels": ["Q"]}, "row label column 'Q' does not exist"),
        ({"row_labels": "A"}, "`row_labels` must list"),
        ({"dimension_unit": "x" * 30}, "`dimension_unit` must be a short text"),
        ({"colour": "red"}, "unknown matrix field 'colour'"),
        ({"body": "A1:A1", "row_labels": ["B"], "column_header_rows": [1]}, "is inside the body"),
    ],
)
def test_an_impossible_matrix_form_says_what_is_wrong(change, message):
    gen = matrixgen.width_by_height()
    _form, errors = matrix_parse({**gen.form, **change}, table_of(gen).sheets[0])
    if message is None:
        assert errors == []
    else:
        assert any(message in e for e in errors), errors


def test_a_body_without_a_price_is_refused_in_words():
    gen = matrixgen.width_by_height()
    _form, errors = matrix_parse(
        {**gen.form, "body": "B1:F1", "column_header_rows": [], "row_labels": ["A"]}, table_of(gen).sheets[0]
    )
    assert errors
    _form, errors = matrix_parse(
        {"row_labels": ["A"], "column_header_rows": [1], "body": "B2:B2"},
        Sheet(name="S", rows=[["", "60"], ["100", "on request"]]),
    )
    assert errors == ["Sheet 'S': the body B2:B2 holds no price under a column label."]


def test_a_sheet_mapped_by_columns_and_matrix_at_once_is_refused():
    gen = matrixgen.width_by_height()
    with pytest.raises(MappingInvalid, match="either `columns`"):
        mapping_parse(
            {
                "sheets": [
                    {
                        "sheet": "Sheet1",
                        "matrix": gen.form,
                        "columns": {"unit_price": "B", "description": "A"},
                    }
                ]
            },
            table_of(gen),
        )


def test_a_mapped_matrix_is_known_by_its_first_column_header_row():
    gen = matrixgen.frame_by_wood_and_size()
    mapping = mapping_parse(
        {"sheets": [{"sheet": "Sheet1", "matrix": gen.form}], "currency": None}, table_of(gen)
    )
    assert mapping["sheets"][0]["header_row"] == 1


@pytest.mark.parametrize(
    "product, labels, column, unit, want",
    [
        ("Roller blind", ["140"], "60", "cm", "Roller blind, 60 × 140 cm"),
        (None, ["Amber Vale", "oriental"], "30 ml", None, "Amber Vale, oriental, 30 ml"),
        (None, ["Sofa assembly"], "Zone A", "km", "Sofa assembly, Zone A"),
        (None, ["Oak panel"], "120", "cm", "Oak panel, 120 cm"),
        ("Blind", ["140.00"], "60.00", None, "Blind, 60 × 140"),
    ],
)
def test_a_description_joins_the_product_the_row_labels_and_the_column_label(
    product, labels, column, unit, want
):
    assert describe(product, labels, column, unit) == want
