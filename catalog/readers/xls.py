"""XLS (Excel 97-2003, and the older BIFF2-BIFF5 files) with xlrd.

xlrd is chosen over python-calamine for XLS (measured in `bench/parse_speed.py`
and the README): calamine is several times faster but gives values only,
while a price list's number formats carry what the cell shows (a price
stored as 8.5232744625 and shown as 8.52) and sometimes its currency
(``"£"#,##0.00``); xlrd with ``formatting_info`` gives both, reads a raw
BIFF2 stream with no OLE2 container, and with ``ignore_workbook_corruption``
opens workbooks whose OLE2 directory repeats a stream. Each cell goes
through the same code as an XLSX cell (``catalog.readers.common.sheet_from_cells``),
then merged ranges are filled.
"""

from __future__ import annotations

import datetime as dt
import io
import struct

import xlrd
from xlrd.biffh import XL_CELL_BOOLEAN, XL_CELL_DATE, XL_CELL_ERROR, XL_CELL_NUMBER, XL_CELL_TEXT
from xlrd.compdoc import CompDocError

from catalog.errors import UnreadableSheet
from catalog.readers.common import (
    MSG_TOO_MANY_SHEETS,
    ReadLimits,
    Table,
    currency_from_number_format,
    decimal_places_of_format,
    fill_merged,
    error_text,
    sheet_from_cells,
)
from catalog.xlsx import EPOCH_1900, EPOCH_1904

MSG_UNREADABLE = "the XLS workbook cannot be read: {detail}"
MSG_ENCRYPTED = "the XLS workbook is password-protected: remove the password and upload it again"
MSG_NO_WORKBOOK = (
    "the file is an OLE2 document (the container of XLS) without an Excel workbook "
    "inside; a password-protected XLSX looks like this: remove the password"
)


def read(data: bytes, *, limits: ReadLimits, filename: str = "") -> Table:
    book = _open(data)
    try:
        if book.nsheets > limits.max_sheets:
            raise UnreadableSheet(MSG_TOO_MANY_SHEETS.format(count=book.nsheets, limit=limits.max_sheets))
        formats = [book.format_map.get(xf.format_key) for xf in book.xf_list]
        texts = [f.format_str if f is not None else "General" for f in formats]
        styles = (
            [currency_from_number_format(t) for t in texts],
            [decimal_places_of_format(t) for t in texts],
        )
        held = [0]
        sheets = []
        for index in range(book.nsheets):
            ws = book.sheet_by_index(index)
            sheet = sheet_from_cells(ws.name, _cells(book, ws), styles, limits, held)
            merges = [(r0, r1 - 1, c0, c1 - 1) for r0, r1, c0, c1 in ws.merged_cells]
            sheets.append(fill_merged(sheet, merges, limits))
            book.unload_sheet(index)
    except (
        xlrd.XLRDError,
        CompDocError,
        struct.error,
        IndexError,
        KeyError,
        AssertionError,
        ValueError,
        UnicodeDecodeError,
    ) as exc:
        raise UnreadableSheet(
            MSG_UNREADABLE.format(detail="its records are damaged (" + error_text(exc) + ")")
        ) from exc
    finally:
        book.release_resources()
    if not sheets:
        raise UnreadableSheet("the XLS workbook has no worksheets")
    return Table(sheets=sheets)


def _open(data: bytes):
    try:
        return xlrd.open_workbook(
            file_contents=data,
            formatting_info=True,
            on_demand=True,
            # Some writers leave a stream listed twice in the OLE2 directory;
            # Excel opens such files, and so does xlrd when told to.
            ignore_workbook_corruption=True,
            logfile=io.StringIO(),
        )
    except xlrd.XLRDError as exc:
        text = str(exc)
        if "encrypted" in text.lower():
            raise UnreadableSheet(MSG_ENCRYPTED) from exc
        if "Can't find workbook" in text:
            raise UnreadableSheet(MSG_NO_WORKBOOK) from exc
        raise UnreadableSheet(MSG_UNREADABLE.format(detail=error_text(exc))) from exc
    except (
        CompDocError,
        struct.error,
        IndexError,
        KeyError,
        AssertionError,
        ValueError,
        UnicodeDecodeError,
        EOFError,
    ) as exc:
        raise UnreadableSheet(
            MSG_UNREADABLE.format(detail="its OLE2 container or BIFF records are damaged")
        ) from exc


def _cells(book, ws):
    """Each row with values: (1-based row, [(0-based column, value, xf index, False)])."""
    for r in range(ws.nrows):
        types, values = ws.row_types(r), ws.row_values(r)
        cells = []
        for c, kind in enumerate(types):
            if kind in (XL_CELL_TEXT, XL_CELL_NUMBER):
                value = values[c]
            elif kind == XL_CELL_DATE:
                value = _date(values[c], book.datemode)
            elif kind == XL_CELL_BOOLEAN:
                value = bool(values[c])
            elif kind == XL_CELL_ERROR:
                value = xlrd.error_text_from_code.get(values[c], "#ERR")
            else:
                continue
            cells.append((c, value, ws.cell_xf_index(r, c), False))
        if cells:
            yield r + 1, cells


def _date(serial: float, datemode: int) -> object:
    """A date serial as the XLSX reader renders it (``catalog.xlsx``)."""
    epoch = EPOCH_1904 if datemode else EPOCH_1900
    if not datemode and serial < 60:
        serial += 1  # Excel's fictitious 1900-02-29
    try:
        moment = epoch + dt.timedelta(days=serial)
    except OverflowError:
        return serial
    return moment.time() if 0 <= serial < 1 else moment
