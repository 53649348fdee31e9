"""The built-in extractor: headers, columns, prices, currency, packs, refusals."""

from decimal import Decimal

import pytest

from catalog.errors import NotAnItemList
from catalog.extraction import detect_currency, extract_items, parse_decimal, split_pack
from catalog.reading import Sheet, Table


def table(*rows, name="Sheet1", currency_formats=None):
    return Table(
        sheets=[Sheet(name=name, rows=[list(r) for r in rows], currency_formats=currency_formats or {})]
    )


def one(extraction):
    assert len(extraction.items) == 1
    return extraction.items[0]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1.234,50", "1234.50"),
        ("1,234.50", "1234.50"),
        ("1 234,50", "1234.50"),
        ("1\u00a0234,50", "1234.50"),
        ("1\u202f234.50", "1234.50"),
        ("1'234.50", "1234.50"),
        ("1.234.567", "1234567"),
        ("0,57", "0.57"),
        ("5.26000", "5.26000"),
        ("1.234,50 €", "1234.50"),
        ("€ 12", "12"),
        ("USD 1,200.00", "1200.00"),
        ("12,-", "12"),
    ],
)
def test_parse_decimal_reads_every_separator_style(text, expected):
    assert parse_decimal(text) == Decimal(expected)


@pytest.mark.parametrize("text", ["от 1 500", "90/pc", "enquire", "12 5", "", "1.2.3,4,5", "по запиту"])
def test_parse_decimal_refuses_text_that_is_not_just_a_number(text):
    assert parse_decimal(text) is None


def test_parse_decimal_uses_the_columns_decimal_comma_for_ambiguous_thousands():
    assert (parse_decimal("1.234", ","), parse_decimal("1,234", ",")) == (Decimal("1234"), Decimal("1.234"))


@pytest.mark.parametrize(
    "text, code",
    [
        ("Price (EUR)", "EUR"),
        ("Preis in €", "EUR"),
        ("Extended Price CAD", "CAD"),
        ("Цена, рубли", "RUB"),
        ("Мин. цена (тг)", "KZT"),
        ("Price (₹)", "INR"),
        ("Цена, грн.", "UAH"),
        ("£", "GBP"),
        ("6,31руб", "RUB"),
    ],
)
def test_detect_currency_reads_symbols_codes_and_words(text, code):
    assert detect_currency(text) == code


@pytest.mark.parametrize("text", ["Price ($)", "Price", "RUB and USD", "Europe", "PG14"])
def test_detect_currency_never_guesses(text):
    assert detect_currency(text) is None


@pytest.mark.parametrize(
    "text, expected",
    [
        ("box of 12", ("box", 12)),
        ("12/case", ("case", 12)),
        ("VE 10", (None, 10)),
        ("kg", ("kg", None)),
        ("24 шт", ("шт", 24)),
        ("12 x 1 kg", (None, 12)),
        ("6", (None, 6)),
        ("Stk.", ("Stk.", None)),
    ],
)
def test_split_pack_separates_pack_size_from_unit(text, expected):
    assert split_pack(text) == expected


def test_header_on_row_6_under_logo_and_address_block_is_found():
    ex = extract_items(
        table(
            ["ACME Wholesale Ltd"],
            [],
            ["12 High Street"],
            ["London"],
            ["Tel 0207 000000"],
            ["Item code", "Description", "Unit", "Unit price (GBP)"],
            ["A-1", "Widget", "each", "2.50"],
        )
    )
    assert one(ex) == {
        "sku": "A-1",
        "description": "Widget",
        "unit": "each",
        "pack_size": None,
        "unit_price": "2.5",
        "currency": "GBP",
        "source": {"sheet": "Sheet1", "row": 7, "price_places": 2},  # shown as 2.50
    }


def test_german_sheet_with_euro_in_cell_and_decimal_comma():
    ex = extract_items(
        table(["Art.-Nr.", "Bezeichnung", "Einheit", "Preis"], ["4711", "Schrauben", "Stk.", "1.234,50 €"])
    )
    item = one(ex)
    assert (item["unit_price"], item["currency"], item["unit"]) == ("1234.5", "EUR", "Stk.")


@pytest.mark.parametrize("header", ["Référence", "Código", "Codice", "Artikelnummer", "Артикул", "SKU"])
def test_sku_column_is_mapped_in_several_languages(header):
    item = one(extract_items(table([header, "Name", "Price (EUR)"], ["X-9", "Thing", "3"])))
    assert item["sku"] == "X-9"


@pytest.mark.parametrize(
    "header", ["Prix", "Precio", "Prezzo", "Prijs", "Цена", "Cena", "Fiyat", "Unit Price"]
)
def test_price_column_is_mapped_in_several_languages(header):
    item = one(extract_items(table(["Code", "Désignation", header], ["X-9", "Thing", "3.10"])))
    assert item["unit_price"] == "3.1"


def test_currency_only_in_title_note_is_used():
    ex = extract_items(
        table(["Price list 2026 - all prices in CHF"], [], ["SKU", "Name", "Price"], ["A", "Apple", "1.20"])
    )
    assert one(ex)["currency"] == "CHF"
    assert any("title rows" in n for n in ex.notes)


def test_currency_from_sibling_header():
    ex = extract_items(
        table(
            ["Part Number", "Description", "Unit Price", "Extended Price CAD"], ["P1", "Res", "0.10", "1.00"]
        )
    )
    assert one(ex)["currency"] == "CAD"


def test_price_header_currency_wins_over_title_note():
    ex = extract_items(table(["Prices in USD"], ["SKU", "Name", "Price (EUR)"], ["A", "Apple", "1"]))
    assert one(ex)["currency"] == "EUR"


def test_currency_from_number_format_of_the_price_cell():
    ex = extract_items(table(["Name", "Price"], ["Rice", "8.99"], currency_formats={1: [(2, 2, "GBP")]}))
    assert one(ex)["currency"] == "GBP"


def test_sheet_with_no_currency_anywhere_leaves_currency_null():
    assert one(extract_items(table(["SKU", "Name", "Price"], ["A", "Apple", "1.20"])))["currency"] is None


def test_bare_dollar_is_not_turned_into_usd_and_is_flagged():
    item = one(extract_items(table(["Name", "Price ($)"], ["X-ray", "500"])))
    assert item["currency"] is None and item["flags"][0]["code"] == "missing_currency"


def test_several_currencies_in_title_rows_are_not_guessed_between():
    ex = extract_items(
        table(["Prices in RUB, delivery in USD"], ["SKU", "Name", "Price"], ["A", "Apple", "1"])
    )
    assert one(ex)["currency"] is None


def test_section_heading_and_blank_rows_are_skipped():
    ex = extract_items(
        table(
            ["SKU", "Name", "Price"],
            ["Fruit"],
            [],
            ["A", "Apple", "1"],
            ["", "Vegetables", ""],
            ["B", "Leek", "2"],
        )
    )
    assert [i["source"]["row"] for i in ex.items] == [4, 6]


def test_total_row_is_not_an_item():
    ex = extract_items(table(["Name", "Price"], ["Apple", "1"], ["Total", "1"]))
    assert [i["description"] for i in ex.items] == ["Apple"]


def test_an_item_named_like_a_total_whose_price_is_no_sum_is_kept_and_flagged():
    # A sum is never below one of its parts: "Total care" at 4 under an item at 9 is an item.
    ex = extract_items(
        table(["Name", "Price"], ["Shampoo", "9"], ["Total care conditioner", "4"], ["Total", "13"])
    )
    assert [i["description"] for i in ex.items] == ["Shampoo", "Total care conditioner"]
    flags = [(f["code"], f["field"]) for f in ex.items[1]["flags"]]
    assert ("total_word", "description") in flags
    assert "total_word" not in {f["code"] for f in ex.items[0].get("flags") or []}
    assert ex.sheets[0]["rows"].get("total") == 1


def test_an_item_named_like_a_total_with_no_price_above_it_is_kept_and_flagged():
    ex = extract_items(
        table(["Name", "Price"], ["Total care conditioner", "4"], ["Shampoo", "9"], ["Total", "13"])
    )
    assert [i["description"] for i in ex.items] == ["Total care conditioner", "Shampoo"]
    (named,) = [f for f in ex.items[0]["flags"] if f["code"] == "total_word"]
    assert "no price of its section stands above it" in named["message"]


def test_a_heading_starts_the_sum_a_total_below_it_is_checked_against():
    ex = extract_items(
        table(["Name", "Price"], ["Fruit"], ["Melon", "9"], ["Vegetables"], ["Leek", "2"], ["Total", "2"])
    )
    assert [i["description"] for i in ex.items] == ["Melon", "Leek"]


def test_a_named_row_whose_price_sums_the_prices_above_it_is_kept_and_flagged_as_a_sum():
    # Its name is in no vocabulary: its price alone says it may be a total.
    ex = extract_items(
        table(["Name", "Price"], ["Melon", "9.50"], ["Leek", "2"], ["Apple", "3.25"], [], ["Ghlrt", "14.75"])
    )
    assert [i["source"]["row"] for i in ex.items] == [2, 3, 4, 6]
    (summed,) = [f for f in ex.items[-1]["flags"] if f["code"] == "sum_of_prices"]
    assert summed["field"] is None and "the sum of the 3 prices above it" in summed["message"]
    assert not any(i.get("flags") for i in ex.items[:3])


def test_a_price_whose_column_does_not_show_its_decimal_sign_is_flagged_with_both_readings():
    ex = extract_items(
        table(
            ["SKU", "Item", "Price IDR"],
            ["S1", "Soap", "15.000"],
            ["S2", "Brush", "7.500"],
            ["S3", "Pail", "12"],
        )
    )
    first = ex.items[0]
    (sign,) = [f for f in first["flags"] if f["code"] == "decimal_sign"]
    assert sign["field"] == "unit_price" and "'15.000' reads as 15 or as 15000" in sign["message"]
    assert "decimal_sign" not in {f["code"] for f in ex.items[2].get("flags") or []}


def test_a_separator_standing_twice_in_the_column_settles_the_decimal_sign():
    ex = extract_items(
        table(["SKU", "Item", "Price"], ["S1", "Soap", "550.000"], ["S2", "Camera", "1.300.000"])
    )
    assert [i["unit_price"] for i in ex.items] == ["550000", "1300000"]
    assert not any(f["code"] == "decimal_sign" for i in ex.items for f in i.get("flags") or [])


def test_a_price_equal_to_a_sum_with_items_right_below_it_is_an_item():
    # A total ends what it sums: 12 = 5 + 7 with Pear right under it is one more price.
    ex = extract_items(
        table(["Name", "Price"], ["Melon", "5"], ["Leek", "7"], ["Melon box", "12"], ["Pear", "4"])
    )
    assert [i["description"] for i in ex.items] == ["Melon", "Leek", "Melon box", "Pear"]
    assert not any(i.get("flags") for i in ex.items)


def test_a_total_word_beside_the_names_with_a_price_below_one_above_is_a_flagged_price_without_item():
    ex = extract_items(
        table(
            ["SKU", "Name", "Note", "Price"],
            ["M1", "Melon", "", "9"],
            ["A2", "Apple", "ripe", "3"],
            ["", "", "Total", "4"],
        )
    )
    codes = {f["code"] for f in ex.items[-1]["flags"]}
    assert [i["source"]["row"] for i in ex.items] == [2, 3, 4]
    assert {"total_word", "price_without_item"} <= codes


def test_two_row_header_is_combined():
    ex = extract_items(
        table(["", "je", "Preis"], ["Artikelbezeichnung", "", "Euro"], [], ["Eier", "St", "0,57"])
    )
    item = one(ex)
    assert (item["unit"], item["unit_price"], item["currency"]) == ("St", "0.57", "EUR")


def test_pack_in_description_is_split():
    item = one(
        extract_items(table(["Code", "Description", "Price"], ["B1", "BANANA ROAST 454G X12", "33.79"]))
    )
    assert (item["unit"], item["pack_size"]) == ("case", 12)


def test_pack_column_splits_pack_from_unit():
    item = one(extract_items(table(["SKU", "Name", "Pack", "Price"], ["A", "Nails", "box of 100", "4"])))
    assert (item["unit"], item["pack_size"]) == ("box", 100)


def test_total_and_discount_columns_are_not_the_price():
    ex = extract_items(
        table(["SKU", "Name", "Total", "Discount %", "Unit price"], ["A", "Apple", "10", "5", "2"])
    )
    assert one(ex)["unit_price"] == "2"


def test_price_written_as_text_becomes_an_item_with_that_text():
    item = one(extract_items(table(["SKU", "Name", "Price"], ["A", "Pump", "on request"])))
    assert item["unit_price"] == "on request"


def test_several_sheets_are_all_read():
    t = Table(
        sheets=[
            Sheet(name="A", rows=[["SKU", "Name", "Price"], ["1", "x", "1"]]),
            Sheet(name="B", rows=[["SKU", "Name", "Price"], ["2", "y", "2"]]),
        ]
    )
    assert [i["source"]["sheet"] for i in extract_items(t).items] == ["A", "B"]


def test_sheet_of_numbers_alone_is_not_an_item_list():
    with pytest.raises(NotAnItemList, match="not an item list"):
        extract_items(table(["foo", "bar"], ["1", "2"]))


def test_price_matrix_is_proposed_as_one_item_per_cell_for_a_reviewer_to_confirm():
    result = extract_items(
        table(["", "30", "40", "50"], ["30", "189.7", "204.9", "219.1"], ["40", "198.3", "215.3", "232.4"])
    )
    assert [i["description"] for i in result.items][:2] == ["30 × 30", "40 × 30"]
    assert result.items[0]["source"] == {"sheet": "Sheet1", "row": 2, "column": "B"}
    assert result.needs_confirmation and result.sheets[0]["matrix"]["body"] == "B2:D3"


@pytest.mark.parametrize(
    "first",
    [lambda i: str(i + 1), lambda i: "26"],
    ids=["row numbers", "one value on every row"],
)
def test_a_list_without_header_whose_first_column_is_row_numbers_or_constant_is_no_matrix(first):
    """Its rows are numbers from the second cell on, so each looks like a
    matrix's column labels; but row numbers, or one value on every row,
    name no dimension down the side: no matrix, an item list to confirm."""
    rows = [
        (
            first(i),
            f"Compact hatchback trim {i}",
            "2024",
            f"{60500 + 700 * i}",
            f"{72600 + 840 * i}",
            f"{69575 + 805 * i}",
        )
        for i in range(8)
    ]
    result = extract_items(table(*rows))
    assert result.refusal is None
    assert len(result.items) == 8 and result.needs_confirmation
    assert result.items[0]["description"] == "Compact hatchback trim 0"


def test_a_list_without_header_whose_first_column_is_sizes_is_no_matrix():
    """Its first row is numbers beside a size, so it looks like a matrix's column labels over
    sizes down the side; but a matrix's column labels stand beside an empty or a text corner,
    and this row's cell over the sizes is a size: the row is an item, the sheet an item list."""
    rows = [
        (f"600X{h}", f"7712{n:05d}", f"{745 + 180 * n}.50", "30", "12")
        for n, h in enumerate(range(300, 1300, 100))
    ]
    result = extract_items(table(*rows))
    assert result.refusal is None
    assert len(result.items) == 10 and result.needs_confirmation


def test_an_item_list_whose_row_numbers_skip_and_whose_tiers_are_numbers_is_no_matrix():
    """Quantity tiers over the price columns ("from 10", "from 20") look like a
    matrix's column labels, and row numbers with gaps like a dimension down
    the side; but a column of names beside them names the rows: the rows
    are items, read as an item list, not refused as a price matrix."""
    rows = [("No", "Description", "from 10", "from 20", "from 50")]
    rows += [
        (str(n), f"Roller blind model {n}", "5.10", "4.90", "4.70") for n in (1, 9, 10, 12, 13, 16, 20, 21)
    ]
    result = extract_items(table(*rows))
    assert result.refusal is None
    assert len(result.items) == 8
    assert result.items[1]["description"] == "Roller blind model 9"


def test_row_labels_of_numbers_and_bands_still_make_a_price_matrix():
    """Row labels that count up but hold bands too ("4-5", "6-10") are a
    dimension, not row numbers: the matrix is still seen as one."""
    rows = [("", "10-20", "20-30", "30-40")]
    rows += [(label, "5.00", "6.00", "7.00") for label in ("1", "2", "3", "4-5", "6-10")]
    with pytest.raises(NotAnItemList, match="price matrix"):
        extract_items(table(*rows))


def test_empty_table_is_not_an_item_list():
    with pytest.raises(NotAnItemList, match="no cells"):
        extract_items(Table(sheets=[Sheet(name="Sheet1", rows=[])]))


def test_header_without_priced_rows_is_not_an_item_list():
    with pytest.raises(NotAnItemList, match="no row below the header has a price"):
        extract_items(table(["SKU", "Name", "Price"], ["A", "Apple", ""]))


def test_notes_say_which_column_was_the_price():
    ex = extract_items(table(["SKU", "Name", "Price (EUR)"], ["A", "Apple", "1"]))
    assert any("price from column C 'Price (EUR)'" in n for n in ex.notes)


def test_a_description_taken_from_another_columns_text_is_flagged_on_the_description():
    rows = [("Code", "Name", "Remark", "Price EUR")]
    rows += [(f"K-{i}", f"Hinge model {i}", "", f"{3 + i}.50") for i in range(8)]
    rows += [("", "", "Hinge model 9, sold by the box", "12.50"), ("", "", "", "4.00")]
    got = extract_items(table(*rows))
    by_row = {i["source"]["row"]: i for i in got.items}
    taken, bare = by_row[10], by_row[11]
    assert taken["description"] == "Hinge model 9, sold by the box"
    (flagged,) = [f for f in taken["flags"] if f["code"] == "price_without_item"]
    assert flagged["field"] == "description"
    assert "column C was taken as the description" in flagged["message"]
    assert [f["field"] for f in bare["flags"] if f["code"] == "price_without_item"] == [None]
