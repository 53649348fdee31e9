"""XLSX (and XLSM, XLTX): the project's streaming reader (``catalog.xlsx``) on a
checked archive; a number shows as its format displays it, the stored value
kept in the sheet's ``raw``."""

from __future__ import annotations

import io
import zipfile

from catalog.errors import UnreadableSheet
from catalog.readers.common import (
    MSG_TOO_MANY_SHEETS,
    ReadLimits,
    Table,
    check_zip,
    currency_from_number_format,
    decimal_places_of_format,
    fill_merged,
    plain_error,
    sheet_from_cells,
)


def read(data: bytes, *, limits: ReadLimits, filename: str = "") -> Table:
    names = check_zip(data, limits, kind="XLSX")
    if "xl/workbook.xml" not in names:
        raise UnreadableSheet("the file is a ZIP archive but not an XLSX workbook (no xl/workbook.xml)")
    from catalog.xlsx import Workbook, XlsxError

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            return _read_workbook(Workbook(zf), limits)
    except (UnreadableSheet, MemoryError):
        raise
    except XlsxError as exc:
        raise UnreadableSheet(f"the XLSX workbook cannot be read: {exc}") from exc
    except RecursionError as exc:
        raise UnreadableSheet("the XLSX workbook cannot be read: its XML is nested too deeply") from exc
    except (IndexError, KeyError) as exc:
        raise UnreadableSheet(
            "the XLSX workbook cannot be read: a cell refers to a shared "
            "string or style the workbook does not contain"
        ) from exc
    except (zipfile.BadZipFile, NotImplementedError, OSError, ValueError, EOFError) as exc:
        raise UnreadableSheet(f"the XLSX workbook cannot be read: {plain_error(exc)}") from exc


def _read_workbook(book, limits: ReadLimits) -> Table:
    if len(book.worksheets) > limits.max_sheets:
        raise UnreadableSheet(MSG_TOO_MANY_SHEETS.format(count=len(book.worksheets), limit=limits.max_sheets))
    # style id -> currency of its number format, computed once per style.
    style_currency = [currency_from_number_format(fmt) for fmt in book.style_formats]
    style_places = [decimal_places_of_format(fmt) for fmt in book.style_formats]
    held = [0]  # rows held over the whole workbook
    sheets = []
    for ws in book.worksheets:
        merges: list[tuple[int, int, int, int]] = []  # filled as the sheet's XML is read
        sheet = sheet_from_cells(
            ws.title, book.rows(ws, merges), (style_currency, style_places), limits, held
        )
        sheets.append(fill_merged(sheet, merges, limits))
    if not sheets:
        raise UnreadableSheet("the XLSX workbook has no worksheets")
    return Table(sheets=sheets)
