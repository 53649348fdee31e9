"""Validation flags: each check on its own."""

from catalog.reading import Sheet, Table
from catalog.validation import needs_review, validate_items

TABLE = Table(
    sheets=[
        Sheet(
            name="Sheet1",
            rows=[
                ["SKU", "Name", "Unit", "Price"],
                ["A1", "Apple", "kg", "1,50"],
                ["B2", "Pear", "Stk", "2.00"],
            ],
        )
    ]
)


def item(**over):
    base = {
        "sku": "A1",
        "description": "Apple",
        "unit": "kg",
        "pack_size": None,
        "unit_price": "1.50",
        "currency": "EUR",
        "source": {"sheet": "Sheet1", "row": 2},
    }
    base.update(over)
    return base


def codes(result):
    return [f["code"] for f in result["flags"]]


def test_clean_item_has_no_flags():
    assert validate_items([item()], TABLE)[0]["flags"] == []


def test_missing_currency_is_flagged():
    assert codes(validate_items([item(currency=None)], TABLE)[0]) == ["missing_currency"]


def test_unknown_unit_is_flagged():
    assert codes(validate_items([item(unit="blorp")], TABLE)[0]) == ["ambiguous_unit"]


def test_ambiguous_unit_is_flagged():
    assert codes(validate_items([item(unit="ед.")], TABLE)[0]) == ["ambiguous_unit"]


def test_units_in_several_languages_are_known():
    items = [item(unit=u) for u in ("шт", "Stück", "pièce", "кг", "pcs", "box", "Bd")]
    assert all(r["flags"] == [] for r in validate_items(items, TABLE))


def test_non_numeric_price_is_flagged_invalid():
    result = validate_items([item(unit_price="enquire")], TABLE)[0]
    assert "invalid_price" in codes(result)


def test_zero_price_is_flagged_invalid():
    assert "invalid_price" in codes(validate_items([item(unit_price="0")], TABLE)[0])


def test_sku_not_in_cited_row_is_unsupported():
    assert codes(validate_items([item(source={"sheet": "Sheet1", "row": 3})], TABLE)[0]) == [
        "unsupported_source",
        "unsupported_source",
    ]


def test_price_not_in_cited_row_is_unsupported():
    result = validate_items([item(unit_price="9.99")], TABLE)[0]
    assert [(f["code"], f["field"]) for f in result["flags"]] == [("unsupported_source", "unit_price")]


def test_a_price_read_from_a_cell_that_groups_thousands_with_a_dot_is_in_its_row():
    rows = [["SKU", "Name", "Price"], ["S1", "Camera", "550.000"]]
    table = Table(sheets=[Sheet(name="Sheet1", rows=rows, currency_formats={})])
    got = validate_items([item(sku="S1", unit_price="550000", source={"sheet": "Sheet1", "row": 2})], table)[
        0
    ]
    assert "unsupported_source" not in codes(got)


def test_missing_sheet_is_unsupported():
    assert codes(validate_items([item(source={"sheet": "Nope", "row": 2})], TABLE)[0]) == [
        "unsupported_source"
    ]


def test_row_out_of_range_is_unsupported():
    assert codes(validate_items([item(source={"sheet": "Sheet1", "row": 99})], TABLE)[0]) == [
        "unsupported_source"
    ]


def test_duplicate_sku_with_different_prices_is_flagged_on_each():
    t = Table(sheets=[Sheet(name="Sheet1", rows=[["A1", "x", "1"], ["A1", "y", "2"]])])
    items = [
        item(description="x", unit=None, unit_price="1", source={"sheet": "Sheet1", "row": 1}),
        item(description="y", unit=None, unit_price="2", source={"sheet": "Sheet1", "row": 2}),
    ]
    assert [codes(r) for r in validate_items(items, t)] == [["duplicate_sku"], ["duplicate_sku"]]


def test_duplicate_sku_with_same_price_is_not_flagged():
    assert validate_items([item(), item()], TABLE)[1]["flags"] == []


def test_empty_description_is_flagged():
    assert codes(validate_items([item(description=" ")], TABLE)[0]) == ["empty_description"]


def test_flags_from_the_extractor_are_kept():
    pre = {"code": "ambiguous_pack", "field": "pack_size", "message": "check"}
    assert validate_items([item(flags=[pre])], TABLE)[0]["flags"] == [pre]


def test_validation_does_not_modify_its_input():
    original = item()
    validate_items([original], TABLE)
    assert "flags" not in original


def test_flag_message_names_the_value_for_a_reviewer():
    flag = validate_items([item(unit="blorp")], TABLE)[0]["flags"][0]
    assert flag["field"] == "unit" and "'blorp'" in flag["message"]


def test_needs_review_when_any_item_is_flagged():
    assert needs_review(validate_items([item(), item(currency=None)], TABLE)) is True


def test_no_review_when_all_items_are_clean():
    assert needs_review(validate_items([item()], TABLE)) is False


def test_a_description_longer_than_any_real_one_is_cut_and_flagged():
    from catalog.validation import cut_long_values

    item, flags = cut_long_values({"sku": "A-1", "description": "x" * 16_000, "unit": "kg"})
    assert len(item["description"]) == 4_000
    assert [(f["code"], f["field"]) for f in flags] == [("too_large", "description")]
    assert "16,000 characters" in flags[0]["message"]


def test_a_sku_of_a_few_hundred_characters_is_cut_and_flagged():
    from catalog.validation import cut_long_values

    item, flags = cut_long_values({"sku": "S" * 1_000, "description": "Apples"})
    assert (len(item["sku"]), item["description"]) == (300, "Apples")
    assert [(f["code"], f["field"]) for f in flags] == [("too_large", "sku")]


def test_a_price_change_is_told_with_prices_as_the_catalog_shows_them():
    from catalog.validation import review_flags

    previous = [
        {
            "sku": "A-1",
            "description": "Bolt",
            "unit_price": "223.930000",
            "currency": "EUR",
            "price_text": "223.93",
        }
    ]
    item = {
        "sku": "A-1",
        "description": "Bolt",
        "unit": "pc",
        "pack_size": None,
        "unit_price": "2239.30",
        "currency": "EUR",
        "source": {"sheet": "S", "row": 2},
        "flags": [],
    }
    message = review_flags([item], previous=previous)[0]["flags"][0]["message"]
    assert "from 223.93 to 2239.30 EUR" in message


def _offer(description: str, pack, price: str, unit: str = "ml") -> dict:
    return {
        "sku": "",
        "description": description,
        "unit": unit,
        "pack_size": pack,
        "unit_price": price,
        "currency": "INR",
        "source": {"sheet": "S", "row": 2},
        "flags": [],
    }


def test_the_same_name_in_two_pack_sizes_is_two_offers_not_a_duplicate():
    from catalog.validation import review_flags

    items = [
        _offer("Herbal tonic", 450, "59"),
        _offer("Herbal tonic", 200, "27"),
        _offer("herbal  TONIC", "450.0", "62"),
    ]
    got = [[f["code"] for f in item["flags"]] for item in review_flags(items)]
    assert got == [["duplicate_item"], [], ["duplicate_item"]]  # 450 ml at 59 and at 62
    assert "no SKU, unit or pack tells them apart" in review_flags(items)[0]["flags"][0]["message"]


def test_a_price_is_compared_with_the_same_offer_in_the_catalog():
    from decimal import Decimal

    from catalog.validation import review_flags

    previous = [
        {**_offer("Herbal tonic", Decimal("450.000"), "59.000000"), "price_text": "59.00"},
        {**_offer("Herbal tonic", Decimal("200.000"), "27.000000"), "price_text": "27.00"},
    ]
    got = review_flags(
        [_offer("Herbal tonic", 450, "60"), _offer("Herbal tonic", 200, "80")], previous=previous
    )
    assert [[f["code"] for f in item["flags"]] for item in got] == [[], ["price_changed"]]
    assert "from 27.00 to 80" in got[1]["flags"][0]["message"]
