"""Column roles from the fitted column model: doubt named per column and per field, values veto headers."""

import pytest

from catalog.extraction import extract
from catalog.extraction.column_model import (
    header_tokens,
    is_gtin,
    is_running_index,
    load_model,
    sheet_features,
    value_features,
)
from catalog.extraction.columns import _article_numbers, _other_prices, _other_texts, column_probabilities
from catalog.extraction.rules_columns import assign_roles, profile_columns
from catalog.reading import Sheet, Table


def table(*rows, name="Sheet1"):
    return Table(sheets=[Sheet(name=name, rows=[list(r) for r in rows])])


def roles(report: dict) -> dict:
    return {c["column"]: c["role"] for c in report["columns"] if c["role"] != "other"}


def probabilities(rows):
    return [p for p, _vetoes, _f in column_probabilities(rows[1:], len(rows[0]), rows[0])]


def test_every_column_gets_a_probability_per_role_that_sums_to_one():
    rows = [["Code", "Name", "Price"]] + [[f"A-{n}", f"Widget number {n}", f"{n}.50"] for n in range(1, 9)]
    for p in probabilities(rows):
        assert set(p) == set(load_model().roles)
        assert abs(sum(p.values()) - 1) < 1e-9


def test_header_words_are_folded_and_lose_plural_and_inflected_endings():
    assert header_tokens("Prices") == header_tokens("price") == header_tokens("PRICE")
    assert header_tokens("Цены") == header_tokens("цена")
    assert header_tokens("Désignation") == header_tokens("designation")


def test_the_sheet_needs_confirmation_exactly_when_one_of_its_columns_does():
    rows = [["Code", "Name", "Price EUR"]] + [
        [f"A-{n}", f"Widget number {n}", f"{n}.50"] for n in range(1, 9)
    ]
    (report,) = extract(table(*rows), column_model=True).sheets
    assert report["needs_confirmation"] == any(c["needs_confirmation"] for c in report["columns"])


def test_every_value_from_a_column_in_doubt_is_flagged_on_its_field():
    rows = [["Code", "Name", "Price EUR"]] + [
        [f"A-{n}", f"Widget number {n}", f"{n}.50"] for n in range(1, 9)
    ]
    ex = extract(table(*rows), column_model=True)
    doubted = {c["role"] for c in ex.sheets[0]["columns"] if c["needs_confirmation"] and c["role"] != "other"}
    assert doubted
    for item in ex.items:
        assert doubted <= {f["field"] for f in item["flags"] if f["code"] == "uncertain_column"}


def test_two_plausible_price_columns_put_the_price_in_doubt():
    rows = [["SKU", "Name", "Price EUR", "Price USD"]]
    rows += [[f"S{n}", f"Thing number {n}", f"{n}.10", f"{n}.30"] for n in range(1, 6)]
    ex = extract(table(*rows), column_model=True)
    price = next(c for c in ex.sheets[0]["columns"] if c["role"] == "unit_price")
    assert price["needs_confirmation"] and ex.needs_confirmation
    assert all(
        any(f["code"] == "uncertain_column" and f["field"] == "unit_price" for f in i["flags"])
        for i in ex.items
    )


def test_a_constant_column_is_no_sku_and_no_description_whatever_its_header_says():
    rows = [["SKU", "Name", "Price"]] + [["ACME", f"Bolt size M{n}", f"{n}.25"] for n in range(3, 12)]
    constant = probabilities(rows)[0]
    assert constant["sku"] == constant["description"] == 0


def test_a_running_row_number_a_year_or_a_percentage_is_no_price():
    rows = [["Price", "Price", "Price", "Name"]]
    rows += [[str(n), str(2000 + n), f"{n}%", f"Bolt size M{n}"] for n in range(1, 12)]
    assert [p["unit_price"] for p in probabilities(rows)[:3]] == [0, 0, 0]


def test_zero_padded_row_numbers_are_a_running_index_and_no_price():
    assert is_running_index([f"{n:03d}" for n in range(1, 12)])
    assert not is_running_index(["001", "002", "003", "4,50"])  # a price among them
    rows = [["Price", "Name"]] + [[f"{n:03d}", f"Bolt size M{n}"] for n in range(1, 12)]
    assert probabilities(rows)[0]["unit_price"] == 0


def test_a_numbered_lists_row_numbers_are_a_running_index_and_no_sku():
    assert is_running_index([f"{n}." for n in range(1, 12)])
    assert not is_running_index([f"{n}." for n in (1, 5, 9, 2, 30)])  # not counting up
    body = [[f"{n}.", f"Tooth filling, size {n}", f"{40 + 7 * n}"] for n in range(1, 30)]
    first = column_probabilities(body, 3, ["", "", ""])[0][0]
    assert max(first, key=first.get) == "row_index"
    assert first["sku"] < 0.5


def test_prices_that_run_on_by_one_are_not_a_row_number():
    rows = [["Code", "Name", "Price"]] + [[f"C{n}", f"Tile cutter {n}", f"{n + 100},00"] for n in range(5)]
    assert probabilities(rows)[2]["unit_price"] > 0


def test_a_link_is_no_description():
    rows = [["Description", "Price"]] + [[f"https://example.com/item/{n}", f"{n}.25"] for n in range(1, 9)]
    assert probabilities(rows)[0]["description"] == 0


@pytest.mark.parametrize("name", ["images/products/item-{n}.jpg", "item_{n}.png", "sheet-{n}.csv"])
def test_a_files_name_is_a_link_no_description_sku_or_price(name):
    rows = [["Name", "SKU", "Price"]]
    rows += [[name.format(n=n), name.format(n=n * 7), name.format(n=n + 20)] for n in range(1, 9)]
    name_, code, price = probabilities(rows)
    assert name_["description"] == code["sku"] == price["unit_price"] == 0


def ean13(n: int) -> str:
    """A 13-digit article number whose check digit is right."""
    body = f"{400638133390 + n * 7919:012d}"
    check = -sum(int(d) * (3 if i % 2 else 1) for i, d in enumerate(body)) % 10
    return body + str(check)


@pytest.mark.parametrize(
    ("text", "checks"),
    [
        ("4006381333931", True),  # EAN-13
        ("73513537", True),  # EAN-8
        ("036000291452", True),  # UPC-A
        ("36000291452", True),  # the same, its leading zero dropped by a spreadsheet
        ("4006381333932", False),  # one digit off
        ("1234567", False),  # too short
        ("400638133393A", False),
    ],
)
def test_an_article_number_is_told_by_its_check_digit(text, checks):
    assert is_gtin(text) is checks
    assert all(is_gtin(ean13(n)) for n in range(50))


@pytest.mark.parametrize("header", ["", "Code"])
def test_a_column_of_article_numbers_is_read_as_a_barcode(header):
    rows = [[header, "Name" if header else "", "Price" if header else ""]]
    rows += [[ean13(n), f"Dish soap lemon {n * 50} ml", f"{n}.45"] for n in range(1, 30)]
    code = probabilities(rows)[0]
    assert max(code, key=code.get) == "barcode" and code["barcode"] >= 0.9


@pytest.mark.parametrize("header", ["", "id"])
def test_a_column_of_words_joined_into_one_token_reads_as_the_sku_not_the_description(header):
    fruits = ["date", "fig", "plum", "apricot", "prune", "raisin", "cherry", "mango", "papaya", "kiwi"]
    kinds = ["sun-dried", "fresh", "black", "golden", "soft"]
    rows = [[header, "Name" if header else "", "Price" if header else ""]]
    rows += [
        [f"{f}-{k}", f"{k.replace('-', ' ').title()} {f}s, sweet and soft", f"{i + 3}.90"]
        for i, (f, k) in enumerate((f, k) for f in fruits for k in kinds)
    ]
    slugs = probabilities(rows)[0]
    assert slugs["sku"] > slugs["description"]


@pytest.mark.parametrize(
    "text, size",
    [
        ("300X400", True),
        ("25 x 25 x 3 mm", True),
        ("20х2,0", True),  # a Cyrillic x, a decimal comma
        ("1200*600*50", True),
        ("10 mm x 20 mm", True),
        ("AB-120", False),
        ("9100017", False),
        ("2x", False),
        ("300x400x500x600", False),  # four measures: no size
    ],
)
def test_a_size_is_two_or_three_measures(text, size):
    assert value_features([text], 1, 0, 1).get("measures") == (1.0 if size else 0.0)


def test_a_column_of_sizes_under_a_code_header_reads_as_no_sku():
    """A header one column off its values (merged cells) leaves "Code" over the sizes: the model
    reads sizes as no SKU, so the rules' SKU there is in doubt."""
    rows = [["Kind", "Code", "Size", "List price"]]
    sizes = [(h, w) for h in (300, 400, 500, 600, 900) for w in (400, 500, 600, 800, 1000, 1200)]
    rows += [
        ["Panel", f"{h}x{w}", f"{9100000 + n * 17}", f"{h * w / 1000:.2f}"] for n, (h, w) in enumerate(sizes)
    ]
    p = probabilities(rows)[1]
    assert p["sku"] < 0.1 and p["sku"] < p["other"]


def rules_and_features(rows):
    body, width = rows[1:], len(rows[0])
    return assign_roles(profile_columns(body, width), rows[0]), sheet_features(body, width)


def test_an_sku_taken_from_article_numbers_needs_confirmation_and_other_codes_do_not():
    name = [f"Dish soap lemon {n * 50} ml" for n in range(1, 30)]
    barcodes = [["SKU", "Name", "Price"]] + [[ean13(n), name[n - 1], f"{n}.45"] for n in range(1, 30)]
    rules, feats = rules_and_features(barcodes)
    assert rules.roles["sku"] == 0
    assert _article_numbers(rules, feats)["sku"][0] == 0
    codes = [["SKU", "Name", "Price"]] + [[f"DS-{n:05d}", name[n - 1], f"{n}.45"] for n in range(1, 30)]
    assert _article_numbers(*rules_and_features(codes)) == {}


def test_every_sku_from_a_column_of_article_numbers_is_flagged_on_its_field():
    rows = [["SKU", "Name", "Price"]] + [
        [ean13(n), f"Dish soap lemon {n * 50} ml", f"{n}.45"] for n in range(1, 30)
    ]
    ex = extract(table(*rows), model_doubt=True)
    (sku,) = [c for c in ex.sheets[0]["columns"] if c["role"] == "sku"]
    assert sku["column"] == "A" and sku["needs_confirmation"]
    assert all(
        any(f["code"] == "uncertain_column" and f["field"] == "sku" for f in i["flags"]) for i in ex.items
    )


WOODS = (
    "oak",
    "ash",
    "elm",
    "beech",
    "pine",
    "birch",
    "maple",
    "cherry",
    "walnut",
    "alder",
    "larch",
    "cedar",
)


def boards(third: str, cell) -> list[list[str]]:
    """A header naming a column of long notes the description, names under ``third``."""
    return [["Description", "Price EUR", third]] + [
        [
            f"Sanded and oiled by hand, {w} keeps its grain for years; ask for matching shelves",
            f"{n}9.90",
            cell(n, w),
        ]
        for n, w in enumerate(WOODS, 1)
    ]


def test_a_description_beside_another_column_of_varied_text_is_in_doubt_on_its_field():
    """Which of two columns of varied words names the items (a name beside a note) the values
    do not settle: the header names the notes, the rules and the model take them."""
    ex = extract(table(*boards("Service", lambda n, w: f"{w.title()} board {n * 10} cm")), model_doubt=True)
    (report,) = ex.sheets
    (description,) = [c for c in report["columns"] if c["role"] == "description"]
    assert description["column"] == "A" and description["needs_confirmation"]
    assert (
        "column A was taken as the description; column C holds varied text too: either may name the items"
        in report["doubts"]
    )
    assert all(
        any(f["code"] == "uncertain_column" and f["field"] == "description" for f in i["flags"])
        for i in ex.items
    )


@pytest.mark.parametrize(
    "cell",
    [
        lambda n, w: "Shelves" if n % 2 else "Boards",  # a category: two values
        lambda n, w: f"BRD-{n:04d}",  # codes
        lambda n, w: f"https://example.com/{w}",  # links
        lambda n, w: f"{n * 12}",  # numbers
    ],
)
def test_only_varied_words_beside_it_put_the_description_in_doubt(cell):
    rules, feats = rules_and_features(boards("Service", cell))
    assert rules.roles["description"] == 0
    assert _other_texts(rules, feats) == {}


def test_a_price_written_as_text_is_still_the_price_column():
    rows = [["Service", "Price", "Notes"]]
    rows += [
        [f"Service number {n}", f"${n}50/hr", f"Call us about the details of plan {n}"] for n in range(1, 8)
    ]
    ex = extract(table(*rows), column_model=True)
    assert ex.refusal is None
    assert roles(ex.sheets[0])["B"] == "unit_price"


def test_a_column_of_currency_codes_is_the_currency():
    rows = [["SKU", "Description", "Price", "Currency"]]
    rows += [[f"A-{n}", f"Apples of kind {n}", f"{n}.50", "EUR"] for n in range(1, 6)]
    ex = extract(table(*rows), column_model=True)
    assert {i["currency"] for i in ex.items} == {"EUR"}


def test_a_reviewers_mapping_is_taken_as_given_and_needs_no_confirmation():
    rows = [["SKU", "Name", "Price"]] + [[f"S{n}", f"Thing {n}", f"{n}.10"] for n in range(1, 4)]
    mapping = {
        "sheets": [
            {
                "sheet": "Sheet1",
                "header_row": 1,
                "columns": {"sku": "A", "description": "B", "unit_price": "C"},
            }
        ]
    }
    ex = extract(table(*rows), mapping, column_model=True)
    assert not ex.needs_confirmation
    assert not any(f["code"] == "uncertain_column" for i in ex.items for f in i.get("flags", []))


def plain_sheet(n=12):
    units = ("pc", "box", "kg")
    return [["SKU", "Description", "Unit", "Price"]] + [
        [f"AB-{k:03d}", f"Steel bolt size M{k} zinc plated", units[k % 3], f"{k}.{k % 10}5"]
        for k in range(1, n)
    ]


def test_with_model_doubt_the_rules_take_the_roles_and_the_model_only_doubts_them():
    rows = plain_sheet()
    rules = extract(table(*rows), model_doubt=True).sheets[0]
    assert roles(rules) == {"A": "sku", "B": "description", "C": "unit", "D": "unit_price"}
    assert all("kind" in c for c in rules["columns"])


def test_a_plain_sheet_the_model_reads_as_the_rules_do_needs_no_confirmation():
    ex = extract(table(*plain_sheet()), model_doubt=True)
    assert not any(c["needs_confirmation"] for c in ex.sheets[0]["columns"])
    assert not any(f["code"] == "uncertain_column" for i in ex.items for f in i.get("flags", []))


def test_a_second_column_the_model_reads_as_a_price_puts_the_price_in_doubt():
    # Only "Price" names a price; the column beside it holds money under a word no vocabulary
    # knows (a tier, another currency). Which is the item's price the values do not say.
    rows = [["Code", "Name", "Price", "Zorblat"]]
    rows += [[f"B-{n:03d}", f"Garden hose {n} m", f"{n * 3}.50", f"{n * 3 - 1}.20"] for n in range(2, 14)]
    rules, _feats = rules_and_features(rows)
    assert _other_prices(rules, probabilities(rows))["unit_price"] == (
        2,
        "column C was taken as the unit price; the column model reads column D as a price too",
    )
    # However sure the model is of column C itself, the price needs confirmation on every item.
    ex = extract(table(*rows), model_doubt=True)
    (report,) = ex.sheets
    assert roles(report)["C"] == "unit_price"
    assert {c["column"] for c in report["columns"] if c["needs_confirmation"]} == {"C"}
    # The report says why (the second price, or the model's own doubt on C when it is below the bar).
    assert any(d.startswith("column C was taken as the unit price") for d in report["doubts"])
    assert all(
        any(f["code"] == "uncertain_column" and f["field"] == "unit_price" for f in i["flags"])
        for i in ex.items
    )


def test_a_role_the_model_reads_otherwise_needs_confirmation_and_flags_its_values_on_that_field():
    # The rules take column B as the description; the model, on two rows, is not sure enough of it.
    rows = [
        ["SKU", "Description", "Unit", "Price EUR"],
        ["A-1", "Apples", "kg", "1.50"],
        ["B-2", "Bananas", "kg", "2.25"],
    ]
    ex = extract(table(*rows), model_doubt=True)
    (report,) = ex.sheets
    doubted = {c["role"] for c in report["columns"] if c["needs_confirmation"]}
    assert "description" in doubted and ex.needs_confirmation
    for item in ex.items:
        assert doubted <= {f["field"] for f in item["flags"] if f["code"] == "uncertain_column"}


def test_a_column_of_years_is_no_price_for_the_rules_either():
    rows = [["Code", "Title", "Price"]] + [
        [f"B{n}", f"Collected volume {n}", str(1990 + n)] for n in range(1, 12)
    ]
    ex = extract(table(*rows))
    assert ex.refusal and not ex.items


def test_model_doubt_leaves_a_reviewers_mapping_without_doubt():
    rows = plain_sheet()
    mapping = {
        "sheets": [
            {
                "sheet": "Sheet1",
                "header_row": 1,
                "columns": {"sku": "A", "description": "B", "unit_price": "D"},
            }
        ]
    }
    ex = extract(table(*rows), mapping, model_doubt=True)
    assert not ex.needs_confirmation
    assert not any(f["code"] == "uncertain_column" for i in ex.items for f in i.get("flags", []))


class _Link:
    def table(self, data):
        pass

    def before_call(self):
        pass

    def on_call(self, request_id, usage):
        pass

    def progress(self, done, total):
        pass


def test_a_file_that_validation_sends_to_review_shows_the_column_doubt_held_back():
    from catalog.pipeline import read_extract_validate
    from catalog.reading import ReadLimits

    # No currency anywhere: extraction itself flags nothing, validation flags every item.
    data = b"SKU,Description,Unit,Price\nA-1,Apples,kg,1.50\nB-2,Bananas,kg,2.25\n"
    got = read_extract_validate(
        data=data,
        filename="fruit.csv",
        table=None,
        read_limits=ReadLimits(),
        extractor="builtin",
        link=_Link(),
    )
    (report,) = got["report"]["columns"]
    assert "held" not in got
    assert got["report"]["needs_confirmation"] and report["needs_confirmation"]
    assert next(c for c in report["columns"] if c["role"] == "description")["needs_confirmation"]
    for item in got["items"]:
        assert "description" in {f["field"] for f in item["flags"] if f["code"] == "uncertain_column"}


def test_a_currency_read_for_a_price_column_in_doubt_is_in_doubt_too():
    rows = [["SKU", "Name", "Price EUR", "Price"]]
    rows += [[f"S{n}", f"Thing number {n}", f"{n}.10", f"{n}.30"] for n in range(1, 6)]
    ex = extract(table(*rows))
    for item in ex.items:
        assert item["currency"] == "EUR"
        assert {"unit_price", "currency"} <= {
            f["field"] for f in item["flags"] if f["code"] == "uncertain_column"
        }


def test_the_model_knows_a_header_only_by_the_words_it_was_fitted_on():
    model = load_model()
    word = sorted(model.vocabulary)[0]
    assert model.knows(f"  {word.upper()}  ")
    assert not model.knows("qzxvbn")
    assert not model.knows("")


def test_read_as_if_it_could_stand_anywhere_a_column_reads_the_same_whatever_the_order():
    rows = [["Code", "Name", "Stock", "Price"]] + [
        [f"A-{n:03}", f"Widget number {n} in {'red' if n % 2 else 'blue'}", str(n % 4), f"{n * 3}.{n:02}"]
        for n in range(1, 13)
    ]
    backwards = [r[::-1] for r in rows]

    def anywhere(rs):
        return [p for p, _v, _f in column_probabilities(rs[1:], len(rs[0]), rs[0], anywhere=True)]

    for back, ahead in zip(anywhere(backwards), anywhere(rows)[::-1], strict=True):
        assert back == pytest.approx(ahead)
    placed = zip(probabilities(backwards), probabilities(rows)[::-1], strict=True)
    assert any(back != pytest.approx(ahead) for back, ahead in placed)  # placed, a column differs


def test_a_role_the_model_confirms_only_where_the_column_stands_needs_confirmation(monkeypatch):
    """The rules took column A as the price; the model reads it as the price only because it
    stands where prices stand, and as a code had it stood anywhere: the price is in doubt."""
    from catalog.extraction import columns as module
    from catalog.extraction.assignment import Assignment, Column

    placed = [{"unit_price": 0.97, "other": 0.03}, {"description": 0.99}, {"other": 1.0}]
    anywhere = [{"sku": 0.6, "unit_price": 0.3, "other": 0.1}, {"description": 0.99}, {"other": 1.0}]
    full = sheet_features([["1", "Widget", "x"]], 3)

    def probs(*a, **k):
        chosen = anywhere if k.get("anywhere") else placed
        return [(p, {}, f) for p, f in zip(chosen, full, strict=True)]

    monkeypatch.setattr(module, "column_probabilities", probs)
    cols = [Column(c, "", "other", 0.5, kind="other") for c in range(3)]
    rules = Assignment(roles={"unit_price": 0, "description": 1}, columns=cols, doubts=[])
    got = module.second_opinion(rules, [["1", "Widget", "x"]], 3, ["", "", ""])
    assert got.doubted["unit_price"][0] == 0
    assert got.doubted["unit_price"][1].endswith(
        "reads it as sku (0.60), unit price 0.30, had the columns stood anywhere on the sheet"
    )
    monkeypatch.setattr(module, "column_probabilities", lambda *a, **k: probs(*a))
    assert "unit_price" not in module.second_opinion(rules, [["1", "Widget", "x"]], 3, ["", "", ""]).doubted


def test_one_note_among_a_columns_codes_does_not_move_how_long_they_read():
    codes = [f"{4100200 + 37 * n}" for n in range(40)]
    note = "Prices valid until further notice, delivery within three working days"
    alone, noted = value_features(codes, 40, 0, 3), value_features([*codes, note], 41, 0, 3)
    assert (noted["mean_len"], noted["len_cv"]) == (alone["mean_len"], alone["len_cv"])
    rows = [[code, f"Tinned beans {n} g", f"{n + 3}.40"] for n, code in enumerate(codes)]
    sku = column_probabilities(rows, 3, ["", "", ""])[0][0]["sku"]
    noted_sku = column_probabilities([*rows, [], [note]], 3, ["", "", ""])[0][0]["sku"]
    assert noted_sku == pytest.approx(sku, abs=0.05)
