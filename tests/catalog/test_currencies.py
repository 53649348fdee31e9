"""Currencies come from the ISO 4217 table pycountry ships (pure)."""

import pytest

from catalog.currencies import currency_choices, currency_error, currency_name, is_active_currency
from catalog.reading import Table
from catalog.validation import validate_items


@pytest.mark.parametrize("code", ["EUR", "USD", "IDR", "KZT", "ZAR", "PHP", "VND"])
def test_active_codes_are_currencies(code):
    assert is_active_currency(code)
    assert currency_name(code)


@pytest.mark.parametrize("code", ["EUT", "EURO", "eur", "HRK", "XXX", "XTS", "", None, 978])
def test_other_values_are_not(code):
    assert not is_active_currency(code)
    assert "not an active ISO 4217 currency code" in currency_error(code)


def test_the_choices_are_every_code_with_its_name_in_code_order():
    choices = currency_choices()
    assert len(choices) > 150
    assert [code for code, _ in choices] == sorted(code for code, _ in choices)
    assert ("IDR", "Rupiah") in choices


def test_validation_flags_an_extracted_code_that_is_not_active():
    table = Table.from_json({"sheets": [{"name": "S", "rows": [["A-1", "Bolt", "pcs", "1.00"]]}]})
    item = {
        "sku": "A-1",
        "description": "Bolt",
        "unit": "pcs",
        "pack_size": None,
        "unit_price": "1.00",
        "currency": "EUT",
        "source": {"sheet": "S", "row": 1},
    }
    flags = validate_items([item], table)[0]["flags"]
    assert [(f["code"], f["field"]) for f in flags] == [("missing_currency", "currency")]
    assert "'EUT' is not an active ISO 4217 code" in flags[0]["message"]
