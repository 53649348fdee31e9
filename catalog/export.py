"""Export of catalog items as CSV and XLSX (pure: rows in, bytes out).

Spreadsheets run a cell that starts with `=`, `+`, `-` or `@` as a formula
(and tab or carriage return can hide such a start), so a supplier's text like
`=HYPERLINK(...)` would execute on the reader's machine. Every text cell that
starts with one of them is prefixed with a single quote, which spreadsheets
read as "this is text". XLSX text cells are written as strings, never as
formulas; numbers are written as numbers (a number cannot be a formula).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from openpyxl import Workbook
from openpyxl.cell.cell import TYPE_STRING

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
COLUMNS = ("sku", "description", "unit", "pack_size", "unit_price", "currency",
           "source_sheet", "source_row")
HEADERS = ("SKU", "Description", "Unit", "Pack size", "Unit price", "Currency",
           "Source sheet", "Source row")
NUMERIC_COLUMNS = frozenset({"pack_size", "unit_price", "source_row"})
XLSX_SHEET_TITLE = "Catalog"


def escape_cell(value: Any) -> str:
    """The cell's text, prefixed with `'` when a spreadsheet would run it."""
    text = "" if value is None else str(value)
    if text.startswith(FORMULA_PREFIXES):
        return "'" + text
    return text


def number_text(value: Any) -> str:
    """A decimal without trailing zeros and never in exponent form."""
    if value is None:
        return ""
    if not isinstance(value, Decimal):
        return str(value)
    return f"{value.normalize():f}"


def price_text(value: Any) -> str:
    """A price keeps at least two decimals (12.50, 0.125)."""
    if not isinstance(value, Decimal):
        return number_text(value)
    if value == value.quantize(Decimal("0.01")):
        return f"{value.quantize(Decimal('0.01')):f}"
    return number_text(value)


def _text(column: str, value: Any) -> str:
    if column == "unit_price":
        return escape_cell(price_text(value))
    if column in NUMERIC_COLUMNS:
        return escape_cell(number_text(value))
    return escape_cell(value)


def rows_to_csv(rows: Iterable[Mapping[str, Any]]) -> bytes:
    """UTF-8 with a byte-order mark, so spreadsheets detect the encoding."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(HEADERS)
    for row in rows:
        writer.writerow([_text(column, row.get(column)) for column in COLUMNS])
    return buffer.getvalue().encode("utf-8-sig")


def rows_to_xlsx(rows: Iterable[Mapping[str, Any]]) -> bytes:
    workbook = Workbook(write_only=False)
    sheet = workbook.active
    sheet.title = XLSX_SHEET_TITLE
    sheet.append(HEADERS)
    for r, row in enumerate(rows, start=2):
        for c, column in enumerate(COLUMNS, start=1):
            value = row.get(column)
            is_number = isinstance(value, (int, Decimal)) and not isinstance(value, bool)
            if column in NUMERIC_COLUMNS and is_number:
                sheet.cell(row=r, column=c, value=value)
                continue
            cell = sheet.cell(row=r, column=c, value=_text(column, value) or None)
            if cell.value is not None:
                # openpyxl guesses a formula from a leading "="; the type is
                # set explicitly so no text cell is ever stored as one.
                cell.data_type = TYPE_STRING
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()
