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
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from openpyxl import Workbook
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE, TYPE_STRING, WriteOnlyCell
from openpyxl.utils import get_column_letter

from catalog.extraction.money import plain_decimal

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
COLUMNS = (
    "sku",
    "description",
    "unit",
    "unit_code",
    "pack_size",
    "unit_price",
    "currency",
    "source_sheet",
    "source_row",
    "provenance",
)
HEADERS = (
    "SKU",
    "Description",
    "Unit",
    "Unit code",
    "Pack size",
    "Unit price",
    "Currency",
    "Source sheet",
    "Source row",
    "Set by a reviewer",
)
# The item fields a reviewer may set, whose provenance is kept.
PROVENANCE_FIELDS = ("sku", "description", "unit", "pack_size", "unit_price", "currency")
NUMERIC_COLUMNS = frozenset({"pack_size", "unit_price", "source_row"})
XLSX_SHEET_TITLE = "Catalog"
MIN_PRICE_PLACES, MAX_PRICE_PLACES = 2, 6
MIN_WIDTH, MAX_WIDTH = 8, 60
# Rows per piece of a streamed CSV: memory holds one piece, whatever the revision's size.
CSV_CHUNK_ROWS = 500


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
            kept[name] = {
                "by": str(entry.get("by") or ""),
                "at": str(entry.get("at") or ""),
                "extracted": entry.get("extracted"),
            }
    return kept


def provenance_text(provenance: Mapping[str, Any] | None) -> str:
    """ "unit_price by rey at 2026-05-04T10:00:00+00:00; unit by ..." for the
    fields a reviewer set, in the order of the columns; empty when every
    value is extracted."""
    provenance = provenance or {}
    return "; ".join(
        f"{name} by {provenance[name].get('by')} at {provenance[name].get('at')}"
        for name in PROVENANCE_FIELDS
        if isinstance(provenance.get(name), Mapping)
    )


def _text(column: str, value: Any, places: int | None = None) -> str:
    if column == "provenance":
        return escape_cell(provenance_text(value))
    if column == "unit_price":
        return escape_cell(price_text(value, places))
    if column in NUMERIC_COLUMNS:
        return escape_cell(number_text(value))
    return escape_cell(value)


def csv_chunks(rows: Iterable[Mapping[str, Any]]) -> Iterator[bytes]:
    """The CSV in pieces of CSV_CHUNK_ROWS rows, UTF-8 with a byte-order mark
    (so spreadsheets detect the encoding): `rows` is read once, as it goes."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(HEADERS)
    first = True
    for n, row in enumerate(rows, start=1):
        writer.writerow([_text(column, row.get(column), row.get("price_places")) for column in COLUMNS])
        if n % CSV_CHUNK_ROWS == 0:
            yield _csv_piece(buffer, first)
            first = False
    yield _csv_piece(buffer, first)


def _csv_piece(buffer: io.StringIO, first: bool) -> bytes:
    text = buffer.getvalue()
    buffer.seek(0)
    buffer.truncate()
    return text.encode("utf-8-sig" if first else "utf-8")


def rows_to_csv(rows: Iterable[Mapping[str, Any]]) -> bytes:
    return b"".join(csv_chunks(rows))


def _number_format(places: int) -> str:
    return "#,##0." + "0" * places if places else "#,##0"


def _is_number(column: str, value: Any) -> bool:
    return column in NUMERIC_COLUMNS and isinstance(value, (int, Decimal)) and not isinstance(value, bool)


def _cell_text(column: str, value: Any) -> str:
    return (
        provenance_text(value) if column == "provenance" else ("" if value is None else xml_text(str(value)))
    )


def _shown_width(column: str, value: Any, places: int | None) -> int:
    if _is_number(column, value):
        if column == "unit_price":
            shown_places = len(price_text(value, places).partition(".")[2])
            return len(f"{value:,.{shown_places}f}")
        return len(number_text(value))
    text = _cell_text(column, value)
    return max(len(line) for line in text.splitlines() or [text])


def _column_widths(rows: Iterable[Mapping[str, Any]]) -> list[int]:
    widths = [len(header) for header in HEADERS]
    for row in rows:
        for c, column in enumerate(COLUMNS):
            widths[c] = max(widths[c], _shown_width(column, row.get(column), row.get("price_places")))
    return widths


def _xlsx_cells(sheet: Any, row: Mapping[str, Any]) -> list:
    cells = []
    for column in COLUMNS:
        value = row.get(column)
        if _is_number(column, value):
            cell = WriteOnlyCell(sheet, value=value)
            if column == "unit_price":
                places = len(price_text(value, row.get("price_places")).partition(".")[2])
                cell.number_format = _number_format(places)
        else:
            text = _cell_text(column, value)
            if not text:
                cells.append(None)
                continue
            cell = WriteOnlyCell(sheet, value=text)
            # openpyxl guesses a formula from a leading "="; the explicit
            # string type is what is saved, and a string is never evaluated.
            cell.data_type = TYPE_STRING
        cells.append(cell)
    return cells


def write_xlsx(rows: Callable[[], Iterable[Mapping[str, Any]]], target: Any) -> None:
    """The workbook into the file `target`, in write-only mode: `rows()` is
    read twice as it goes (once to size the columns, once to write the
    cells, inline strings), so memory does not grow with the revision."""
    widths = _column_widths(rows())
    workbook = Workbook(write_only=True)
    sheet = workbook.create_sheet(XLSX_SHEET_TITLE)
    for c, width in enumerate(widths, start=1):
        sheet.column_dimensions[get_column_letter(c)].width = min(max(width + 2, MIN_WIDTH), MAX_WIDTH)
    sheet.freeze_panes = "A2"
    sheet.append(HEADERS)
    for row in rows():
        sheet.append(_xlsx_cells(sheet, row))
    workbook.save(target)


def rows_to_xlsx(rows: Iterable[Mapping[str, Any]]) -> bytes:
    rows = list(rows)
    out = io.BytesIO()
    write_xlsx(lambda: rows, out)
    return out.getvalue()


def xlsx_file(rows: Callable[[], Iterable[Mapping[str, Any]]], when: datetime) -> Any:
    """An anonymous temporary file (gone when closed) holding the workbook
    stamped with `when`, positioned at its start, ready to be served."""
    with tempfile.TemporaryFile() as built:
        write_xlsx(rows, built)
        built.seek(0)
        stamped = tempfile.TemporaryFile()  # noqa: SIM115 (the response closes it)
        try:
            restamp_xlsx(built, stamped, when)
        except BaseException:
            stamped.close()
            raise
    stamped.seek(0)
    return stamped


def deterministic_xlsx(data: bytes, when: datetime) -> bytes:
    out = io.BytesIO()
    restamp_xlsx(io.BytesIO(data), out, when)
    return out.getvalue()


def restamp_xlsx(source_file: Any, target_file: Any, when: datetime) -> None:
    """The same workbook with every timestamp set to `when`: openpyxl stamps
    the save time into the zip entries and the document properties, which
    would give each download of one revision different bytes (and a strong
    ETag must name exactly one byte sequence). Entries are copied in pieces."""
    stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ").encode()
    with (
        zipfile.ZipFile(source_file) as source,
        zipfile.ZipFile(target_file, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for entry in source.infolist():
            info = zipfile.ZipInfo(entry.filename, date_time=when.timetuple()[:6])
            info.compress_type = zipfile.ZIP_DEFLATED
            if entry.filename == "docProps/core.xml":
                target.writestr(info, _restamp(source.read(entry.filename), stamp))
                continue
            with source.open(entry) as reading, target.open(info, "w") as writing:
                shutil.copyfileobj(reading, writing, 1 << 16)


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
