"""Export of catalog items as CSV and XLSX (pure: rows in, bytes out).

Spreadsheets run a cell that starts with `=`, `+`, `-` or `@` as a formula
(and tab or carriage return can hide such a start), so a supplier's text like
`=HYPERLINK(...)` would execute on the reader's machine.

- CSV has no cell types: every text cell that starts with one of them is
  prefixed with a single quote, which spreadsheets read as "this is text".
- XLSX has them: text cells are stored with the explicit string type, which
  no spreadsheet evaluates, so the text stays exactly as the supplier wrote
  it (no visible quote). Numbers are numbers (a number cannot be a formula):
  each price carries a number format with the decimals the supplier gave
  (as every page shows it), the currency sits in its own column, columns
  are sized to their content and the header row stays in view.
"""

from __future__ import annotations

import csv
import io
import zipfile
from collections.abc import Iterable, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from openpyxl import Workbook
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE, TYPE_STRING
from openpyxl.utils import get_column_letter

from catalog.extraction.money import plain_decimal

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
COLUMNS = ("sku", "description", "unit", "unit_code", "pack_size", "unit_price", "currency",
           "source_sheet", "source_row", "provenance")
HEADERS = ("SKU", "Description", "Unit", "Unit code", "Pack size", "Unit price", "Currency",
           "Source sheet", "Source row", "Set by a reviewer")
# The item fields a reviewer may set, whose provenance is kept.
PROVENANCE_FIELDS = ("sku", "description", "unit", "pack_size", "unit_price", "currency")
NUMERIC_COLUMNS = frozenset({"pack_size", "unit_price", "source_row"})
XLSX_SHEET_TITLE = "Catalog"
MIN_PRICE_PLACES, MAX_PRICE_PLACES = 2, 6
MIN_WIDTH, MAX_WIDTH = 8, 60


def escape_cell(value: Any) -> str:
    """The cell's text, prefixed with `'` when a spreadsheet would run it."""
    text = "" if value is None else str(value)
    if text.startswith(FORMULA_PREFIXES):
        return "'" + text
    return text


def xml_text(text: str) -> str:
    """``text`` with each control character XML cannot hold (all below a space
    but tab, newline and carriage return) shown as U+FFFD: one such character
    in a published cell must not make the export fail on every download."""
    return ILLEGAL_CHARACTERS_RE.sub("\ufffd", text)


def number_text(value: Any) -> str:
    """A decimal without trailing zeros and never in exponent form."""
    if value is None:
        return ""
    if not isinstance(value, Decimal):
        return str(value)
    return f"{value.normalize():f}"


def _places_needed(value: Decimal) -> int:
    return max(0, -value.normalize().as_tuple().exponent)


def price_text(value: Any, places: int | None = None) -> str:
    """A price with `places` decimals (as the supplier wrote it, see
    item_price_places), or more when the value needs them: never rounded.
    Without `places`, at least two (12.50, 0.125)."""
    if not isinstance(value, Decimal) or not value.is_finite():
        return number_text(value)
    shown = max(MIN_PRICE_PLACES if places is None else places, _places_needed(value))
    return f"{value.quantize(Decimal(1).scaleb(-shown)):f}"


def item_price_places(item: Mapping[str, Any]) -> int:
    """The decimals an extracted item's price is shown with: those the sheet
    showed (`source.price_places`, set by the extractor when the canonical
    `unit_price` dropped trailing zeros) or those of `unit_price` as written,
    never fewer than the value needs."""
    value = plain_decimal(item.get("unit_price"))
    if value is None or not value.is_finite():
        return MIN_PRICE_PLACES
    written = (item.get("source") or {}).get("price_places")
    written = written if isinstance(written, int) and not isinstance(written, bool) else 0
    return min(max(written, -value.as_tuple().exponent, 0), MAX_PRICE_PLACES)


def item_price_text(item: Mapping[str, Any]) -> str:
    """An extracted item's price as every page shows it."""
    value = plain_decimal(item.get("unit_price"))
    if value is None:
        return str(item.get("unit_price") or "")
    return price_text(value, item_price_places(item))


def published_provenance(item: Mapping[str, Any]) -> dict:
    """The provenance a published item keeps: for each field a reviewer set,
    who, when and what was extracted (from the review's `provenance`)."""
    kept = {}
    for name, entry in (item.get("provenance") or {}).items():
        if name in PROVENANCE_FIELDS and isinstance(entry, Mapping):
            kept[name] = {"by": str(entry.get("by") or ""), "at": str(entry.get("at") or ""),
                          "extracted": entry.get("extracted")}
    return kept


def provenance_text(provenance: Mapping[str, Any] | None) -> str:
    """"unit_price by rey at 2026-05-04T10:00:00+00:00; unit by ..." for the
    fields a reviewer set, in the order of the columns; empty when every
    value is extracted."""
    provenance = provenance or {}
    return "; ".join(f"{name} by {provenance[name].get('by')} at {provenance[name].get('at')}"
                     for name in PROVENANCE_FIELDS if isinstance(provenance.get(name), Mapping))


def _text(column: str, value: Any, places: int | None = None) -> str:
    if column == "provenance":
        return escape_cell(provenance_text(value))
    if column == "unit_price":
        return escape_cell(price_text(value, places))
    if column in NUMERIC_COLUMNS:
        return escape_cell(number_text(value))
    return escape_cell(value)


def rows_to_csv(rows: Iterable[Mapping[str, Any]]) -> bytes:
    """UTF-8 with a byte-order mark, so spreadsheets detect the encoding."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(HEADERS)
    for row in rows:
        writer.writerow([_text(column, row.get(column), row.get("price_places")) for column in COLUMNS])
    return buffer.getvalue().encode("utf-8-sig")


def _number_format(places: int) -> str:
    return "#,##0." + "0" * places if places else "#,##0"


def rows_to_xlsx(rows: Iterable[Mapping[str, Any]]) -> bytes:
    rows = list(rows)
    workbook = Workbook(write_only=False)
    sheet = workbook.active
    sheet.title = XLSX_SHEET_TITLE
    sheet.append(HEADERS)
    widths = [len(header) for header in HEADERS]
    for r, row in enumerate(rows, start=2):
        for c, column in enumerate(COLUMNS, start=1):
            value = row.get(column)
            is_number = isinstance(value, (int, Decimal)) and not isinstance(value, bool)
            if column in NUMERIC_COLUMNS and is_number:
                cell = sheet.cell(row=r, column=c, value=value)
                if column == "unit_price":
                    places = len(price_text(value, row.get("price_places")).partition(".")[2])
                    cell.number_format = _number_format(places)
                    shown = len(f"{value:,.{places}f}")
                else:
                    shown = len(number_text(value))
            else:
                text = provenance_text(value) if column == "provenance" else (
                    "" if value is None else xml_text(str(value)))
                if not text:
                    continue
                cell = sheet.cell(row=r, column=c, value=text)
                # openpyxl guesses a formula from a leading "="; the explicit
                # string type is what is saved, and a string is never evaluated.
                cell.data_type = TYPE_STRING
                shown = max(len(line) for line in text.splitlines() or [text])
            widths[c - 1] = max(widths[c - 1], shown)
    for c, width in enumerate(widths, start=1):
        sheet.column_dimensions[get_column_letter(c)].width = min(max(width + 2, MIN_WIDTH), MAX_WIDTH)
    sheet.freeze_panes = "A2"
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def deterministic_xlsx(data: bytes, when: datetime) -> bytes:
    """The same workbook with every timestamp set to `when`: openpyxl stamps
    the save time into the zip entries and the document properties, which
    would give each download of one revision different bytes (and a strong
    ETag must name exactly one byte sequence)."""
    stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ").encode()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for entry in source.infolist():
            content = source.read(entry.filename)
            if entry.filename == "docProps/core.xml":
                content = _restamp(content, stamp)
            info = zipfile.ZipInfo(entry.filename, date_time=when.timetuple()[:6])
            info.compress_type = zipfile.ZIP_DEFLATED
            target.writestr(info, content)
    return out.getvalue()


def _restamp(core_xml: bytes, stamp: bytes) -> bytes:
    for tag in (b"dcterms:created", b"dcterms:modified"):
        start = core_xml.find(b"<" + tag)
        if start < 0:
            continue
        open_end = core_xml.find(b">", start) + 1
        close = core_xml.find(b"</" + tag + b">", open_end)
        if open_end > 0 and close > 0:
            core_xml = core_xml[:open_end] + stamp + core_xml[close:]
    return core_xml
