"""Validation of extracted items (pure): per-item flags a reviewer understands.

Works on items from either extractor. Flags already on an item (doubts the
built-in extractor saw) are kept; the checks below add theirs. Any flag sends
the job to review.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from catalog.currencies import is_active_currency
from catalog.extraction import AMBIGUOUS_UNITS, fold, parse_decimal
from catalog.reading import Table
from catalog.units import unit_is_ambiguous, unit_label, unit_normalize

MSG_MISSING_CURRENCY = (
    "No currency was found for this price (not in the cell, its number format, "
    "the price header, the other headers or the sheet's title rows); set the currency."
)
MSG_BAD_CURRENCY = "Currency {value!r} is not an active ISO 4217 code; set the currency."
MSG_UNKNOWN_UNIT = "Unit {unit!r} is not a known unit of sale; check what one price buys."
MSG_NEAREST_UNITS = " Nearest known units: {units}."
MSG_AMBIGUOUS_UNIT = "Unit {unit!r} does not say what is counted (piece, kg, box...); check it."
MSG_INVALID_PRICE = "Price {price!r} is not a positive decimal number."
MSG_NO_SHEET = "The cited sheet {sheet!r} does not exist in the file."
MSG_NO_ROW = "The cited row {row} is outside sheet {sheet!r} (it has {count} rows)."
MSG_SKU_NOT_IN_ROW = "Row {row} of sheet {sheet!r} does not contain the SKU {sku!r}."
MSG_DESC_NOT_IN_ROW = "Row {row} of sheet {sheet!r} does not contain the description."
MSG_PRICE_NOT_IN_ROW = "Row {row} of sheet {sheet!r} does not contain the price {price}."
MSG_DUPLICATE_SKU = "SKU {sku!r} appears {count} times with different prices ({prices})."
MSG_EMPTY_DESCRIPTION = "The description is empty."

_PLAIN_DECIMAL = re.compile(r"^-?\d+(?:\.\d+)?$")
_HAS_DIGIT = re.compile(r"\d")


def _flag(code: str, field: str | None, message: str) -> dict:
    return {"code": code, "field": field, "message": message}


MAX_PRICE = Decimal(10) ** 12  # the catalog keeps 12 digits before the point


def _strict_price(text) -> Decimal | None:
    text = str(text)
    if len(text) > 40:
        return None
    try:
        value = Decimal(text)
    except (InvalidOperation, ValueError, TypeError):
        return None
    return value if value.is_finite() and abs(value) < MAX_PRICE else None


def _cell_prices(text: str) -> tuple[Decimal | None, Decimal | None]:
    # A cell like "1.234" reads differently by locale; accept either reading.
    return parse_decimal(text, "."), parse_decimal(text, ",")


def _source_flags(item: dict, price: Decimal | None, sheets: dict) -> list[dict]:
    source = item.get("source") or {}
    sheet_name, row_no = source.get("sheet"), source.get("row")
    sheet = sheets.get(sheet_name)
    if sheet is None:
        return [_flag("unsupported_source", "source", MSG_NO_SHEET.format(sheet=sheet_name))]
    if not isinstance(row_no, int) or not 1 <= row_no <= len(sheet.rows):
        return [_flag("unsupported_source", "source",
                      MSG_NO_ROW.format(row=row_no, sheet=sheet_name, count=len(sheet.rows)))]
    row = sheet.rows[row_no - 1]
    flags = []
    sku = (item.get("sku") or "").strip()
    if sku:
        # Plain substring first (the common case); folding only when that fails.
        if not any(sku in c for c in row):
            key = fold(sku)
            if not any(key in fold(c) for c in row if c):
                flags.append(_flag("unsupported_source", "sku",
                                   MSG_SKU_NOT_IN_ROW.format(row=row_no, sheet=sheet_name, sku=sku)))
    else:
        desc = (item.get("description") or "").strip()
        if desc and not any(desc in c for c in row):
            key = fold(desc)
            if not any(key in fold(c) for c in row if c):
                flags.append(_flag("unsupported_source", "description",
                                   MSG_DESC_NOT_IN_ROW.format(row=row_no, sheet=sheet_name)))
    price_text = str(item.get("unit_price") or "")
    found = price_text in row
    if not found and price is not None:
        # Cheap pass over plain numbers, then the full parser on the rest.
        slow = []
        for c in row:
            if _PLAIN_DECIMAL.match(c):
                if Decimal(c) == price:
                    found = True
                    break
            elif c and _HAS_DIGIT.search(c):
                slow.append(c)
        if not found:
            found = any(price in _cell_prices(c) for c in slow)
    if not found:
        flags.append(_flag("unsupported_source", "unit_price",
                           MSG_PRICE_NOT_IN_ROW.format(row=row_no, sheet=sheet_name, price=price_text)))
    return flags


# What the catalog's columns hold besides the price (catalog.models.CatalogItem;
# a test keeps the two in step): a value past them could never be published.
MAX_PACK_SIZE = Decimal(10) ** 9       # numeric(12, 3)
MAX_TEXT = {"sku": 200, "unit": 50}
MSG_TOO_LARGE_PACK = "Pack size {pack} is not a number below 1,000,000,000 that the catalog can store."
MSG_TOO_LONG = "The {field} is {length} characters long; the catalog stores at most {limit}."
# Cell text is cut at Excel's own limit when read (catalog.reading): text that
# long may be cut, so a person looks at it before it is published.
MAX_CELL_CHARS = 32_767
MSG_CUT = "The {field} is {length:,} characters long, the most a cell holds: it may have been cut; check it."


def _size_flags(item: dict) -> list[dict]:
    """Values past what the catalog's columns hold (prices: see MAX_PRICE)."""
    flags = []
    pack = item.get("pack_size")
    if pack is not None:
        number = _strict_price(pack)
        if number is None or abs(number) >= MAX_PACK_SIZE:
            flags.append(_flag("too_large", "pack_size", MSG_TOO_LARGE_PACK.format(pack=str(pack)[:40])))
    for name in ("description", "sku", "unit"):
        length = len(str(item.get(name) or ""))
        if length >= MAX_CELL_CHARS:
            flags.append(_flag("too_large", name, MSG_CUT.format(field=name, length=length)))
    for name, limit in MAX_TEXT.items():
        length = len(str(item.get(name) or ""))
        if length > limit:
            flags.append(_flag("too_large", name, MSG_TOO_LONG.format(
                field=name.upper() if name == "sku" else name, length=length, limit=limit)))
    return flags


def validate_items(items: list[dict], table: Table) -> list[dict]:
    """Copies of ``items``, each with ``"flags"``: a list of {code, field, message}."""
    sheets = {s.name: s for s in table.sheets}
    prices_by_sku: dict[str, set[Decimal | str]] = {}
    count_by_sku: dict[str, int] = {}
    prices = [_strict_price(item.get("unit_price")) for item in items]
    for item, price in zip(items, prices):
        sku = (item.get("sku") or "").strip()
        if sku:
            prices_by_sku.setdefault(sku, set()).add(price if price is not None else str(item.get("unit_price")))
            count_by_sku[sku] = count_by_sku.get(sku, 0) + 1

    unit_cache: dict[str, list[dict]] = {}
    out: list[dict] = []
    for n, item in enumerate(items):
        flags = [dict(f) for f in item.get("flags") or []]
        currency = item.get("currency")
        if not currency:
            flags.append(_flag("missing_currency", "currency", MSG_MISSING_CURRENCY))
        elif not is_active_currency(currency):
            flags.append(_flag("missing_currency", "currency", MSG_BAD_CURRENCY.format(value=currency)))

        unit = item.get("unit")
        if unit:
            got = unit_cache.get(unit)
            if got is None:
                code, nearest = unit_normalize(unit)
                if fold(unit).strip() in AMBIGUOUS_UNITS or unit_is_ambiguous(unit):
                    got = [_flag("ambiguous_unit", "unit", MSG_AMBIGUOUS_UNIT.format(unit=unit))]
                elif code is None:
                    message = MSG_UNKNOWN_UNIT.format(unit=unit)
                    if nearest:
                        message += MSG_NEAREST_UNITS.format(
                            units=", ".join(unit_label(c) for c in nearest))
                    got = [_flag("ambiguous_unit", "unit", message)]
                else:
                    got = []
                unit_cache[unit] = got
            flags.extend(dict(f) for f in got)

        price = prices[n]
        if price is None or price <= 0:
            flags.append(_flag("invalid_price", "unit_price", MSG_INVALID_PRICE.format(price=item.get("unit_price"))))

        flags.extend(_size_flags(item))
        flags.extend(_source_flags(item, price, sheets))

        sku = (item.get("sku") or "").strip()
        if sku and len(prices_by_sku.get(sku, ())) > 1:
            shown = ", ".join(sorted(str(p) for p in prices_by_sku[sku])[:5])
            flags.append(_flag("duplicate_sku", "sku",
                               MSG_DUPLICATE_SKU.format(sku=sku, count=count_by_sku[sku], prices=shown)))

        if not (item.get("description") or "").strip():
            flags.append(_flag("empty_description", "description", MSG_EMPTY_DESCRIPTION))

        seen = set()
        unique = []
        for f in flags:
            key = (f["code"], f["field"])
            if key not in seen:
                seen.add(key)
                unique.append(f)
        copy = dict(item)
        copy["source"] = dict(item.get("source") or {})
        copy["flags"] = unique
        out.append(copy)
    return out


def needs_review(items_with_flags: list[dict]) -> bool:
    """True when any item carries a flag: such output is never published directly."""
    return any(item.get("flags") for item in items_with_flags)
