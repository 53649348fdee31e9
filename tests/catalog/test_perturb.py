"""The robustness benchmark's changes (bench/corpus/perturb.py) move a sheet and its label together."""

from bench.corpus.perturb import perturbed
from catalog.extraction.headers import classify_header
from catalog.readers.common import Sheet, Table

ROWS = [["Code", "Name", "Price EUR"], ["K-1", "Hinge", "3.50"], ["K-2", "Bolt", "0.40"]]
LABEL = {
    "file": "dev/files/invented.csv",
    "kind": "item_list",
    "sheets": [
        {
            "sheet": 0,
            "header_rows": [1],
            "columns": {"A": "sku", "B": "description", "C": "unit_price"},
            "item_rows": "2-3",
        }
    ],
}


def table() -> Table:
    return Table([Sheet("Sheet1", [list(r) for r in ROWS], {}, {})])


def test_gaps_put_an_empty_column_after_every_column_and_move_the_label():
    got, label = perturbed("gaps", table(), LABEL)
    assert got.sheets[0].rows[1] == ["K-1", "", "Hinge", "", "3.50"]
    assert label["sheets"][0]["columns"] == {"A": "sku", "C": "description", "E": "unit_price"}


def test_a_foreign_header_names_nothing_and_leaves_the_body_and_the_label():
    got, label = perturbed("foreign", table(), LABEL)
    header = got.sheets[0].rows[0]
    assert len(header) == 3 and all(header) and header != ROWS[0]
    assert [classify_header(text) for text in header] == [None, None, None]
    assert got.sheets[0].rows[1:] == ROWS[1:]
    assert label == LABEL


def test_changes_compose_in_order():
    got, label = perturbed("reverse", *perturbed("noheader", table(), LABEL))
    assert got.sheets[0].rows == [["3.50", "Hinge", "K-1"], ["0.40", "Bolt", "K-2"]]
    assert label["sheets"][0]["header_rows"] == []
    assert label["sheets"][0]["columns"] == {"C": "sku", "B": "description", "A": "unit_price"}
    assert label["sheets"][0]["item_rows"] == "1-2"


def test_a_title_puts_three_rows_above_and_moves_the_label_down():
    got, label = perturbed("title", table(), LABEL)
    rows = got.sheets[0].rows
    assert len(rows) == 6 and all(len(r) == 1 and r[0] for r in rows[:3])
    assert rows[3:] == ROWS
    assert label["sheets"][0]["header_rows"] == [4]
    assert label["sheets"][0]["item_rows"] == "5-6"


def test_sections_put_a_heading_in_the_description_column_above_every_tenth_item():
    rows = [ROWS[0]] + [[f"K-{i}", f"Hinge {i}", "1.00"] for i in range(12)]
    lab = {**LABEL, "sheets": [{**LABEL["sheets"][0], "item_rows": "2-13"}]}
    got, label = perturbed("sections", Table([Sheet("Sheet1", rows, {}, {})]), lab)
    rows = got.sheets[0].rows
    assert rows[1][0] == "" and rows[1][1] and len(rows[1]) == 2  # above the first item
    assert rows[12][0] == "" and len(rows[12]) == 2  # above the eleventh
    assert label["sheets"][0]["item_rows"] == "3-12,14-15"
    assert [rows[r - 1][0] for r in (3, 12, 14, 15)] == ["K-0", "K-9", "K-10", "K-11"]


def test_shift_moves_the_header_one_column_right_and_leaves_the_body_and_the_label():
    got, label = perturbed("shift", table(), LABEL)
    assert got.sheets[0].rows[0] == ["", *ROWS[0]]
    assert got.sheets[0].rows[1:] == ROWS[1:]
    assert label == LABEL


def test_comma_writes_the_money_columns_the_continental_way_and_leaves_the_codes():
    rows = [ROWS[0], ["1234", "Hinge", "1234.5"], ["K-2", "Bolt", "0.40"]]
    got, label = perturbed("comma", Table([Sheet("Sheet1", rows, {}, {})]), LABEL)
    assert got.sheets[0].rows == [ROWS[0], ["1234", "Hinge", "1.234,5"], ["K-2", "Bolt", "0,40"]]
    assert label == LABEL


def test_taxed_puts_the_price_with_tax_right_of_the_price_and_labels_it_another_price():
    got, label = perturbed("taxed", table(), LABEL)
    rows = got.sheets[0].rows
    assert [r[:3] for r in rows[1:]] == [["K-1", "Hinge", "3.50"], ["K-2", "Bolt", "0.40"]]
    assert [r[3] for r in rows[1:]] == ["4.20", "0.48"]
    assert rows[0][3] and classify_header(rows[0][3]) is None
    assert label["sheets"][0]["columns"] == {
        "A": "sku",
        "B": "description",
        "C": "unit_price",
        "D": "alt_price",
    }


def test_pages_repeat_the_header_after_an_empty_row_above_every_fortieth_item():
    rows = [ROWS[0]] + [[f"K-{i}", f"Hinge {i}", "1.00"] for i in range(85)]
    lab = {**LABEL, "sheets": [{**LABEL["sheets"][0], "item_rows": "2-86"}]}
    got, label = perturbed("pages", Table([Sheet("Sheet1", rows, {}, {})]), lab)
    rows = got.sheets[0].rows
    assert (rows[41], rows[42]) == ([], ROWS[0])  # above the 41st item
    assert (rows[83], rows[84]) == ([], ROWS[0])  # above the 81st
    assert label["sheets"][0]["header_rows"] == [1]
    assert label["sheets"][0]["item_rows"] == "2-41,44-83,86-90"
    assert rows[43][0] == "K-40" and rows[89][0] == "K-84"


def test_spaced_puts_an_empty_row_after_every_item_but_the_last():
    got, label = perturbed("spaced", table(), LABEL)
    assert got.sheets[0].rows == [ROWS[0], ROWS[1], [], ROWS[2]]
    assert label["sheets"][0]["item_rows"] == "2,4"


def test_twoline_wraps_the_header_after_each_cells_first_word():
    rows = [["Item code", "Name", "Unit price EUR"], *ROWS[1:]]
    got, label = perturbed("twoline", Table([Sheet("Sheet1", rows, {}, {})]), LABEL)
    assert got.sheets[0].rows == [["Item", "Name", "Unit"], ["code", "", "price EUR"], *ROWS[1:]]
    assert label["sheets"][0]["header_rows"] == [1, 2]
    assert label["sheets"][0]["item_rows"] == "3-4"


def test_numbered_puts_a_running_number_first_and_moves_the_label():
    got, label = perturbed("numbered", table(), LABEL)
    rows = got.sheets[0].rows
    assert [r[0] for r in rows[1:]] == ["1", "2"] and rows[1][1:] == ROWS[1]
    assert rows[0][0] and classify_header(rows[0][0]) is None
    assert label["sheets"][0]["columns"] == {"B": "sku", "C": "description", "D": "unit_price"}


def test_stock_puts_whole_numbers_right_of_the_price_under_no_role():
    got, label = perturbed("stock", table(), LABEL)
    rows = got.sheets[0].rows
    assert [r[:3] for r in rows[1:]] == ROWS[1:]
    assert all(r[3].isdigit() and int(r[3]) <= 500 for r in rows[1:])
    assert label["sheets"][0]["columns"] == LABEL["sheets"][0]["columns"]


def test_barcode_puts_thirteen_digits_with_their_check_digit_right_of_the_description():
    got, label = perturbed("barcode", table(), LABEL)
    codes = [r[2] for r in got.sheets[0].rows[1:]]
    for code in codes:
        digits = [int(d) for d in code]
        assert len(digits) == 13 and sum(d * (3 if i % 2 else 1) for i, d in enumerate(digits)) % 10 == 0
    assert label["sheets"][0]["columns"] == {"A": "sku", "B": "description", "D": "unit_price"}


def test_links_put_a_web_address_last():
    got, label = perturbed("links", table(), LABEL)
    assert all(r[3].startswith("https://www.") for r in got.sheets[0].rows[1:])
    assert label["sheets"][0]["columns"] == LABEL["sheets"][0]["columns"]


def test_footer_puts_a_total_of_the_prices_and_a_note_after_the_last_item_outside_the_items():
    got, label = perturbed("footer", table(), LABEL)
    rows = got.sheets[0].rows
    assert rows[:3] == ROWS and rows[3] == []
    assert rows[4][1] and rows[4][2] == "3.90" and not rows[4][0]
    assert len(rows[5]) == 1 and len(rows[5][0].split()) == 8
    (sheet,) = label["sheets"]
    assert (sheet["header_rows"], sheet["columns"], sheet["item_rows"]) == (
        [1],
        LABEL["sheets"][0]["columns"],
        "2-3",
    )


def test_currency_writes_the_currency_with_every_price_and_states_it_in_the_label():
    got, label = perturbed("currency", table(), LABEL)
    prices = [r[2] for r in got.sheets[0].rows[1:]]
    assert prices in (["EUR 3.50", "EUR 0.40"], ["3.50 EUR", "0.40 EUR"])
    assert (label["currency"], label["currency_basis"]) == ("EUR", "cell")
    assert label["sheets"] == LABEL["sheets"]


def test_category_puts_a_few_group_names_left_of_the_description():
    got, label = perturbed("category", table(), LABEL)
    rows = got.sheets[0].rows
    assert [r[0] for r in rows] == ["Code", "K-1", "K-2"] and [r[2:] for r in rows[1:]] == [
        r[1:] for r in ROWS[1:]
    ]
    assert rows[1][1] == rows[2][1] and rows[1][1].istitle()
    assert label["sheets"][0]["columns"] == {"A": "sku", "C": "description", "D": "unit_price"}


def test_remarks_put_a_sentence_on_some_items_last():
    label = {**LABEL, "sheets": [{**LABEL["sheets"][0], "item_rows": "2-41"}]}
    rows = [ROWS[0], *[[f"K-{n}", "Hinge", "3.50"] for n in range(40)]]
    got, _label = perturbed("remarks", Table([Sheet("Sheet1", rows, {}, {})]), label)
    notes = [r[3] for r in got.sheets[0].rows[1:] if len(r) > 3 and r[3]]
    assert 0 < len(notes) < 40 and all(n.endswith(".") and len(n.split()) >= 4 for n in notes)


def test_barcode_leaves_a_sheet_without_an_sku_as_it_is():
    no_sku = {**LABEL, "sheets": [{**LABEL["sheets"][0], "columns": {"B": "description", "C": "unit_price"}}]}
    got, label = perturbed("barcode", table(), no_sku)
    assert got.sheets[0].rows == ROWS and label == no_sku
