"""Column roles from content, the columns report, and a reviewer's mapping."""

import pytest

from catalog.extraction import MappingError, extract, mapping_errors
from catalog.reading import Sheet, Table


def table(*rows, name="Sheet1"):
    return Table(sheets=[Sheet(name=name, rows=[list(r) for r in rows])])


def roles(report: dict) -> dict:
    return {c["column"]: c["role"] for c in report["columns"] if c["role"] != "other"}


def test_report_gives_header_row_and_every_columns_role_evidence_and_confidence():
    ex = extract(
        table(
            ["Title"],
            ["Code", "Name", "Price EUR"],
            ["A-1", "Blue widget", "2.50"],
            ["A-2", "Red widget", "3.10"],
        )
    )
    (report,) = ex.sheets
    assert report["header_row"] == 2
    assert roles(report) == {"A": "sku", "B": "description", "C": "unit_price"}
    assert all(c["evidence"] and 0 < c["confidence"] <= 1 for c in report["columns"])
    assert report["needs_confirmation"] is False


def test_unknown_header_words_do_not_make_a_sheet_not_an_item_list():
    ex = extract(
        table(
            ["Qwerty", "Zxcv", "Asdf"],
            ["K-100", "Hammer with a wooden handle", "12.40"],
            ["K-101", "Saw for metal, 300 mm", "8.95"],
            ["K-102", "Screwdriver set of six", "15.00"],
        )
    )
    assert ex.refusal is None
    assert [i["unit_price"] for i in ex.items] == ["12.4", "8.95", "15"]
    assert roles(ex.sheets[0]) == {"A": "sku", "B": "description", "C": "unit_price"}


def test_sheet_without_header_row_goes_to_review_with_mapping_to_confirm():
    ex = extract(
        table(
            ["K-100", "Hammer with a wooden handle", "12.40"],
            ["K-101", "Saw for metal, 300 mm", "8.95"],
            ["K-102", "Screwdriver set of six", "15.00"],
        )
    )
    assert len(ex.items) == 3
    assert ex.needs_confirmation
    assert ex.sheets[0]["header_row"] is None
    assert any("no header row" in d for d in ex.sheets[0]["doubts"])


def test_a_letterhead_over_a_sheet_without_header_is_no_columns_value():
    rows = [
        [f"{code}", f"Fresh fruit number {i}", f"{i * 7 % 50 + 10}.{i % 10}0"]
        for i, code in enumerate([3774, 768, 778, 787, 789, 773, 763, 792, 798, 799, 775, 801], start=1)
    ]
    letterhead = [
        ["Fruit Traders Ltd"],
        ["Long Road 11, 41690 Some Town, tel. +79 931 396 5000"],
        ["11.04.2023"],
    ]
    bare, headed = extract(table(*rows)), extract(table(*letterhead, *rows))
    assert [(i["sku"], i["description"], i["unit_price"]) for i in headed.items] == [
        (i["sku"], i["description"], i["unit_price"]) for i in bare.items
    ]
    # The letterhead's lines, in the first column, would make it look like a column of row numbers
    # under section titles; read from the table's rows only, every column reads as without them.
    strip = ("column", "role", "kind", "confidence", "needs_confirmation", "evidence")
    assert [{k: c[k] for k in strip} for c in headed.sheets[0]["columns"]] == [
        {k: c[k] for k in strip} for c in bare.sheets[0]["columns"]
    ]
    assert [i["source"]["row"] for i in headed.items] == [r + 3 for r in range(1, 13)]


def test_near_miss_header_loses_to_content_and_the_mapping_is_flagged():
    rows = [["CODE", "DESC_ADIC", "DESCRIP", "PRICE"]]
    for n in range(20):
        rows.append([f"X{n:03d}", "ACME", f"Stainless steel bolt M{n + 4} x {10 * n + 20} mm", f"{n + 1}.25"])
    ex = extract(table(*rows))
    assert {i["description"] for i in ex.items} == {r[2] for r in rows[1:]}
    assert roles(ex.sheets[0])["C"] == "description"


def test_mostly_empty_description_column_loses_to_a_full_name_column():
    rows = [["Nom", "Description", "Prix"]]
    for n in range(12):
        rows.append([f"Plat du jour numéro {n}", "épicé" if n == 0 else "", f"{n + 9},50"])
    ex = extract(table(*rows))
    assert [i["description"] for i in ex.items][:2] == ["Plat du jour numéro 0", "Plat du jour numéro 1"]


def test_two_plausible_price_columns_need_confirmation():
    rows = [["SKU", "Name", "Price EUR", "Price USD"]]
    rows += [[f"S{n}", f"Thing number {n}", f"{n}.10", f"{n}.30"] for n in range(1, 6)]
    ex = extract(table(*rows))
    assert ex.needs_confirmation
    assert any("two plausible price columns" in d for d in ex.sheets[0]["doubts"])


def test_mapping_is_taken_as_given_and_needs_no_confirmation():
    rows = [["K-100", "Hammer", "x", "12.40", "99"], ["K-101", "Saw", "y", "8.95", "98"]]
    mapping = {
        "sheets": [
            {
                "sheet": "Sheet1",
                "header_row": None,
                "columns": {
                    "sku": "A",
                    "description": "B",
                    "unit": None,
                    "pack_size": None,
                    "unit_price": "E",
                    "currency": None,
                },
            }
        ],
        "currency": "EUR",
    }
    ex = extract(table(*rows), mapping=mapping)
    assert [(i["sku"], i["unit_price"], i["currency"]) for i in ex.items] == [
        ("K-100", "99", "EUR"),
        ("K-101", "98", "EUR"),
    ]
    assert not ex.needs_confirmation
    assert ex.sheets[0]["source"] == "reviewer"


def test_mapping_reads_only_the_sheets_it_lists():
    t = Table(
        sheets=[
            Sheet(name="A", rows=[["SKU", "Name", "Price"], ["1", "x", "2"]]),
            Sheet(name="B", rows=[["SKU", "Name", "Price"], ["2", "y", "3"]]),
        ]
    )
    mapping = {
        "sheets": [
            {"sheet": "B", "header_row": 1, "columns": {"sku": "A", "description": "B", "unit_price": "C"}}
        ],
        "currency": None,
    }
    ex = extract(t, mapping=mapping)
    assert [i["source"]["sheet"] for i in ex.items] == ["B"]
    assert [s["status"] for s in ex.sheets] == ["not selected", "read"]


@pytest.mark.parametrize(
    "mapping, words",
    [
        ({"sheets": [{"sheet": "Sheet1", "header_row": 1, "columns": {"sku": "A"}}]}, "no price column"),
        (
            {"sheets": [{"sheet": "Sheet1", "header_row": 1, "columns": {"unit_price": "B"}}]},
            "no description or SKU",
        ),
        (
            {"sheets": [{"sheet": "Sheet1", "header_row": 1, "columns": {"sku": "A", "unit_price": "Q"}}]},
            "does not exist",
        ),
        ({"sheets": [{"sheet": "Nope", "header_row": 1, "columns": {}}]}, "no sheet"),
        (
            {"sheets": [{"sheet": "Sheet1", "header_row": 99, "columns": {"sku": "A", "unit_price": "B"}}]},
            "header row",
        ),
    ],
)
def test_impossible_mapping_is_explained(mapping, words):
    errors = mapping_errors(mapping, table(["SKU", "Price"], ["A", "1"]))
    assert any(words in e for e in errors)


def test_extract_refuses_a_mapping_without_price():
    mapping = {"sheets": [{"sheet": "Sheet1", "header_row": 1, "columns": {"sku": "A"}}]}
    with pytest.raises(MappingError):
        extract(table(["SKU", "Price"], ["A", "1"]), mapping=mapping)


def test_refusal_says_which_kind_and_that_a_reviewer_can_map_it():
    ex = extract(
        table(
            ["Weight", "Zone 1", "Zone 2", "Zone 3"],
            ["do 1 kg", "4.10", "5.20", "6.30"],
            ["do 5 kg", "5.10", "6.20", "7.30"],
            ["do 10 kg", "6.10", "7.20", "8.30"],
        )
    )
    assert ex.items == []
    assert "rate card" in ex.refusal and "reviewer can still map" in ex.refusal
    assert ex.sheets[0]["status"] == "refused"


def test_amounts_written_with_cents_are_no_sku_whatever_their_header_says():
    rows = [["Code", "Name", "Wholesale price EUR"]]
    rows += [[f"{n}.90", f"Road map of region {n}", f"{n}.40"] for n in range(2, 12)]
    ex = extract(table(*rows))
    assert "sku" not in roles(ex.sheets[0]).values()
    assert {i["sku"] for i in ex.items} == {""}


def test_codes_written_with_three_or_more_places_stay_skus():
    rows = [["Code", "Name", "Price EUR"]] + [
        [f"3100.{n:03d}", f"Cabinet door {n}", f"{n}.40"] for n in range(2, 12)
    ]
    assert roles(extract(table(*rows)).sheets[0])["A"] == "sku"


def test_two_close_description_columns_put_the_description_in_doubt_and_flag_it():
    rows = [["Code", "Name", "Other name", "Price EUR"]]
    rows += [
        [f"K-{n}", f"Steel bolt number {n} zinc", f"Bolt of steel {n} plated", f"{n}.40"]
        for n in range(2, 12)
    ]
    ex = extract(table(*rows))
    (report,) = ex.sheets
    assert ex.needs_confirmation
    assert any("description" in d for d in report["doubts"])
    assert next(c for c in report["columns"] if c["role"] == "description")["needs_confirmation"]
    assert all(
        any(f["code"] == "uncertain_column" and f["field"] == "description" for f in i["flags"])
        for i in ex.items
    )


@pytest.mark.parametrize(
    ("label", "role"),
    [
        ("Descriptions", "description"),
        ("Item codes", "sku"),
        ("SKUs", "sku"),
        ("Article numbers", "sku"),
        ("Precios", "unit_price"),
        ("Unit prices", "unit_price"),
    ],
)
def test_a_header_word_in_the_plural_names_its_role(label, role):
    from catalog.extraction.headers import classify_header

    assert classify_header(label)[0] == role


def test_an_empty_word_list_matches_nothing():
    from catalog.extraction.headers import phrases

    assert phrases(()).search("Price") is None


@pytest.mark.parametrize("label", ["\u200fPrice", "\u202bPrice\u202c", "\ufeffPrice", "Pri\u00adce"])
def test_invisible_direction_marks_and_format_characters_do_not_hide_a_header_word(label):
    from catalog.extraction.headers import classify_header

    assert classify_header(label)[0] == "unit_price"


@pytest.mark.parametrize(
    ("header", "role"),
    [
        ("Prezzi", "unit_price"),  # the plural of a listed word
        ("Prodotti", "description"),
        ("Товары", "description"),
        ("Наименования", "description"),
        ("Quantities", "quantity"),
        ("Codes", "sku"),
        ("SKUs", "sku"),  # a word of three letters matches its plural in -s or -es only
        ("Skua", None),
        # An ending at most two letters longer than the one the word drops: "precio" is not
        # "precieuse".
        ("Precios", "unit_price"),
        ("Pierre précieuse", None),
        ("Pessoas", None),
    ],
)
def test_header_words_match_their_plurals_and_simple_inflections(header, role):
    from catalog.extraction.headers import classify_header

    got = classify_header(header)
    assert (got and got[0]) == role


def test_a_header_one_column_off_its_values_is_read_with_the_price_in_doubt_not_refused():
    # Every word stands one column right of its values and the last column is empty, so the
    # header is not read shifted: "Description" stands over the prices, "Price" over the
    # commission's percentages. The values rule out what each of those headers names, so its
    # words say nothing of that column: the prices are taken by their values, to confirm.
    rows = [["", "Name", "Description", "Price", "Commission", "Notes"]]
    rows += [[f"Blood test panel {n}", f"Panel {n}", f"{n * 50}", f"{n % 3 * 10} %"] for n in range(2, 14)]
    ex = extract(table(*rows))
    assert ex.refusal is None
    (report,) = ex.sheets
    assert roles(report)["C"] == "unit_price"
    assert report["needs_confirmation"]
    assert [i["unit_price"] for i in ex.items][:2] == ["100", "150"]
    assert all(
        any(f["code"] == "uncertain_column" and f["field"] == "unit_price" for f in i["flags"])
        for i in ex.items
    )


def test_a_header_that_names_no_item_names_says_which_were_taken_by_their_values():
    from catalog.extraction.rules_columns import _header_silent

    one = _header_silent({"description": 0, "unit_price": 1}, ["Notes", "Price"])
    assert one == [
        (
            "description",
            "the header names no SKU or description column; the description from column A was taken by its values",
        )
    ]
    both = _header_silent({"sku": 0, "description": 1, "unit_price": 2}, ["", "Notes", "Price"])
    assert [why for _r, why in both] == [
        "the header names no SKU or description column; the sku from column A and the description from "
        "column B were taken by their values"
    ] * 2


def test_a_header_that_names_the_sku_over_values_that_are_none_puts_the_sku_in_doubt():
    rows = [["Description", "SKU", "Price EUR"]] + [
        [f"Garden hose {n} m", "ACME", f"{n + 3}.50"] for n in range(12)
    ]
    ex = extract(table(*rows))
    (report,) = ex.sheets
    assert roles(report) == {"A": "description", "C": "unit_price"}
    # Values under the header's word that rule it out: the header may stand off its values.
    assert ex.needs_confirmation
    assert next(c for c in report["columns"] if c["column"] == "B")["needs_confirmation"]
    assert [f["code"] for f in ex.items[0]["flags"] if f["field"] == "sku"] == ["uncertain_column"]


def test_prices_that_run_on_by_one_are_read_as_prices_without_a_header():
    from catalog.extraction.rules_columns import assign_roles, profile_columns

    # Row numbers and prices are told apart as the column model tells them (one spelling):
    # "100,00", "101,00" are amounts, "1.", "2." a numbered list's rows.
    prices = profile_columns([[f"Tile cutter model {n}", f"{n + 100},00"] for n in range(8)], 2)
    assert not prices[1].sequential
    assert assign_roles(prices, ["", ""]).roles["unit_price"] == 1
    numbered = profile_columns([[f"{n}.", f"Tile cutter model {n}", f"{40 + 7 * n}"] for n in range(1, 9)], 3)
    assert [p.sequential for p in numbered] == [True, False, False]
    assert assign_roles(numbered, ["", "", ""]).roles["unit_price"] == 2
