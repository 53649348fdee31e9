"""Currencies a price may be in: the active ISO 4217 codes, with their names.

The list comes from pycountry, which ships the ISO 4217 table of Debian's
iso-codes (current codes only; withdrawn ones such as HRK or SLL are not in
it), so no list is kept by hand here. Pure: no ORM, no request.
"""

from __future__ import annotations

import pycountry

# Active ISO 4217 codes that are not money a price can be in.
NOT_A_PRICE_CURRENCY = frozenset(
    {
        "XTS",  # reserved for testing
        "XXX",  # "no currency involved"
    }
)

CURRENCIES: dict[str, str] = dict(
    sorted((c.alpha_3, c.name) for c in pycountry.currencies if c.alpha_3 not in NOT_A_PRICE_CURRENCY)
)

MSG_NOT_A_CODE = "{value!r} is not an active ISO 4217 currency code (for example EUR, USD, IDR)."


def is_active_currency(code: object) -> bool:
    """True for an active ISO 4217 code, written as the standard writes it (upper case)."""
    return isinstance(code, str) and code in CURRENCIES


def currency_name(code: str) -> str | None:
    return CURRENCIES.get(code)


def currency_choices() -> list[tuple[str, str]]:
    """(code, name) pairs in code order, for pickers."""
    return list(CURRENCIES.items())


def currency_error(value: object) -> str | None:
    """None when `value` is an active code, else a sentence saying what is wrong."""
    if is_active_currency(value):
        return None
    return MSG_NOT_A_CODE.format(value=value)
