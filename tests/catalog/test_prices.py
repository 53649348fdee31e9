"""The one price parser (catalog.extraction.money): a sheet's cell, a stored
price and a price a reviewer typed, each read by its own rule."""

from decimal import Decimal

import pytest

from catalog.extraction import MAX_PRICE, parse_decimal, plain_decimal, price_value, typed_price
from catalog.extraction.money import decimal_style, other_reading


@pytest.mark.parametrize(
    ("typed", "stored"),
    [
        ("1.10", "1.10"),
        ("1,10", "1.10"),
        (" 12 ", "12"),
        ("0.125", "0.125"),
        ("0", None),
        ("-1", None),
        ("1.234,50", None),
        ("1,2,3", None),
        ("ten", None),
        ("", None),
    ],
)
def test_a_typed_price_keeps_its_digits_and_reads_a_decimal_comma(typed, stored):
    assert typed_price(typed) == stored


def test_a_stored_price_is_plain_decimal_text_the_catalog_can_hold():
    assert price_value("12.50") == Decimal("12.50")
    assert price_value(str(MAX_PRICE)) is None
    assert price_value("NaN") is None and price_value("1" * 41) is None
    assert price_value("1.234,50") is None  # a cell's spelling, not a stored price


def test_a_cell_is_read_in_its_own_separator_style():
    assert parse_decimal("1.234,50") == Decimal("1234.50")
    assert parse_decimal("€ 12") == Decimal(12)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("EUR 12", Decimal(12)),
        ("12 EUR", Decimal(12)),
        ("USD12", Decimal(12)),
        ("(RUR 1 500)", Decimal(-1500)),
        ("RMB 5", Decimal(5)),
        # Three capitals that are no currency code: an article code, a quantity.
        ("WDC12", None),
        ("VSV-100", None),
        ("ABC 123", None),
        ("12 PCS", None),
        ("12 XEUR", None),
    ],
)
def test_a_currency_code_beside_a_number_is_a_currency_and_other_capitals_are_no_price(text, value):
    assert parse_decimal(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0012", None),
        ("007", None),
        ("0012.50", None),
        ("€ 0099", None),
        ("-012", None),
        ("0", Decimal(0)),
        ("0.50", Decimal("0.50")),
        ("0,5", Decimal("0.5")),
        ("-0.25", Decimal("-0.25")),
        ("€ 0,99", Decimal("0.99")),
        ("1 012", Decimal(1012)),
        ("10.05", Decimal("10.05")),
    ],
)
def test_a_whole_number_led_by_a_zero_is_a_code_not_an_amount(text, value):
    assert parse_decimal(text) == value


def test_plain_decimal_refuses_what_is_not_a_number():
    assert plain_decimal(None) is None and plain_decimal("abc") is None
    assert plain_decimal(3) == Decimal(3)


@pytest.mark.parametrize(
    ("cells", "style"),
    [
        # A separator that stands twice in one number separates thousands.
        (["550.000", "1.300.000"], ","),
        (["550,000", "1,300,000"], "."),
        # After a whole part no group of thousands begins with, it is the decimal sign.
        (["570.000", "1030.000"], "."),
        (["0,125", "1,250"], ","),
        # Three digits after one separator, and nothing else: no style.
        (["15.000", "7.500", "125.000"], None),
    ],
)
def test_a_column_shows_its_decimal_sign_by_any_cell_that_can_be_read_one_way_only(cells, style):
    assert decimal_style(cells) == style


def test_a_price_with_one_separator_before_three_digits_has_another_reading():
    assert other_reading("15.000") == (".", Decimal(15000))
    assert other_reading("1,299") == (",", Decimal("1.299"))
    assert other_reading("12.50") is None and other_reading("1.300.000") is None
