"""XLSB (binary Excel workbook) with python-calamine, behind a record scan.

calamine (Rust) builds each sheet as a dense range from its first to its last
cell, and an allocation it cannot make aborts the process instead of raising.
So before calamine sees the bytes, every worksheet part's records are
scanned here (row headers, cells, the declared dimension, merged ranges): a
sheet that reaches beyond the row or column limit, or whose range holds more
cells than ``max_dense_cells``, is refused with its size. calamine gives
values, not number formats: numbers show as stored (15 significant digits),
dates as the XLSX reader renders them. Merged ranges come from the scan.
"""

from __future__ import annotations

import io
import posixpath
import struct
import zipfile
from dataclasses import dataclass, field
from xml.parsers import expat

from catalog.errors import UnreadableSheet
from catalog.readers.common import (
    MSG_TOO_MANY_COLUMNS,
    MSG_TOO_MANY_ROWS,
    MSG_TOO_MANY_SHEETS,
    ReadLimits,
    Table,
    check_zip,
    fill_merged,
    error_text,
    sheet_from_cells,
)

MSG_UNREADABLE = "the XLSB workbook cannot be read: {detail}"
MSG_DENSE = (
    "sheet {sheet!r} spans {rows} rows by {cols} columns ({cells} cells, limit {limit}); "
    "remove the far-away cells or split the sheet"
)

BRT_ROW_HDR = 0
# BrtCellBlank .. BrtFmlaError carry their column; the short forms (12-18)
# follow the previous cell of the row.
FULL_CELLS = range(1, 12)
SHORT_CELLS = range(12, 19)
BRT_BUNDLE_SH = 156
BRT_WS_DIM = 148
BRT_MERGE_CELL = 176
REL_NS = "http://schemas.openxmlformats.org/package/2006/relationships"


@dataclass
class Extent:
    """What a worksheet part reaches (0-based, inclusive), from its records."""

    last_row: int = -1
    last_col: int = -1
    merges: list[tuple[int, int, int, int]] = field(default_factory=list)


def read(data: bytes, *, limits: ReadLimits, filename: str = "") -> Table:
    check_zip(data, limits, kind="XLSB")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            parts = _sheet_parts(zf)
            if len(parts) > limits.max_sheets:
                raise UnreadableSheet(MSG_TOO_MANY_SHEETS.format(count=len(parts), limit=limits.max_sheets))
            extents = {name: _scan(name, zf.read(path), limits) for name, path in parts}
    except (
        zipfile.BadZipFile,
        struct.error,
        IndexError,
        ValueError,
        KeyError,
        EOFError,
        expat.ExpatError,
        UnicodeDecodeError,
    ) as exc:
        raise UnreadableSheet(MSG_UNREADABLE.format(detail=error_text(exc))) from exc
    return _read_values(data, extents, limits)


def _read_values(data: bytes, extents: dict[str, Extent], limits: ReadLimits) -> Table:
    from python_calamine import CalamineWorkbook

    held = [0]
    sheets = []
    try:
        book = CalamineWorkbook.from_filelike(io.BytesIO(data))
        for name, extent in extents.items():
            rows = book.get_sheet_by_name(name).to_python(skip_empty_area=False)
            sheet = sheet_from_cells(name, _cells(rows), ([], []), limits, held)
            sheets.append(fill_merged(sheet, extent.merges, limits))
    except UnreadableSheet:
        raise
    except BaseException as exc:  # noqa: BLE001  calamine's errors, a Rust panic included
        if isinstance(exc, (KeyboardInterrupt, SystemExit, MemoryError)):
            raise
        raise UnreadableSheet(MSG_UNREADABLE.format(detail=error_text(exc))) from exc
    if not sheets:
        raise UnreadableSheet("the XLSB workbook has no worksheets")
    return Table(sheets=sheets)


def _cells(rows):
    for r, values in enumerate(rows, start=1):
        cells = [(c, v, 0, False) for c, v in enumerate(values) if v is not None and v != ""]
        if cells:
            yield r, cells


def _records(buf: bytes):
    """(record type, offset of its data, data size) of each BIFF12 record."""
    i, n = 0, len(buf)
    while i < n:
        b = buf[i]
        i += 1
        kind = b & 0x7F
        if b & 0x80:
            kind |= (buf[i] & 0x7F) << 7
            i += 1
        size = shift = 0
        for _ in range(4):
            b = buf[i]
            i += 1
            size |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        if i + size > n:
            raise ValueError("a record runs past the end of its part")
        yield kind, i, size
        i += size


def _wide_string(buf: bytes, at: int) -> tuple[str, int]:
    (count,) = struct.unpack_from("<I", buf, at)
    if count > 32_767:
        raise ValueError("a sheet name is longer than any workbook allows")
    end = at + 4 + 2 * count
    return buf[at + 4 : end].decode("utf-16-le"), end


def _sheet_parts(zf: zipfile.ZipFile) -> list[tuple[str, str]]:
    """(sheet name, part path) of each worksheet, in workbook order."""
    rels: dict[str, str] = {}

    def start(name, attrs):
        if name.endswith("Relationship") and attrs.get("Type", "").endswith("/worksheet"):
            rels[attrs.get("Id", "")] = posixpath.normpath(posixpath.join("xl", attrs.get("Target", "")))

    from catalog.xlsx import safe_parser

    parser = safe_parser(StartElementHandler=start)
    parser.Parse(zf.read("xl/_rels/workbook.bin.rels"), True)
    book = zf.read("xl/workbook.bin")
    parts = []
    for kind, at, _size in _records(book):
        if kind == BRT_BUNDLE_SH:
            rel_id, after = _wide_string(book, at + 8)
            name, _ = _wide_string(book, after)
            if rel_id in rels:
                parts.append((name, rels[rel_id]))
    return parts


def _scan(name: str, buf: bytes, limits: ReadLimits) -> Extent:
    extent = Extent()
    row = col = -1
    for kind, at, size in _records(buf):
        if kind == BRT_ROW_HDR and size >= 4:
            (row,) = struct.unpack_from("<I", buf, at)
            col = -1
            extent.last_row = max(extent.last_row, row)
        elif kind in FULL_CELLS and size >= 4:
            (col,) = struct.unpack_from("<I", buf, at)
            extent.last_col = max(extent.last_col, col)
        elif kind in SHORT_CELLS:
            col += 1
            extent.last_col = max(extent.last_col, col)
        elif kind in (BRT_WS_DIM, BRT_MERGE_CELL) and size >= 16:
            r0, r1, c0, c1 = struct.unpack_from("<4I", buf, at)
            extent.last_row, extent.last_col = max(extent.last_row, r1), max(extent.last_col, c1)
            if kind == BRT_MERGE_CELL:
                extent.merges.append((r0, r1, c0, c1))
    rows, cols = extent.last_row + 1, extent.last_col + 1
    if rows > limits.max_rows:
        raise UnreadableSheet(MSG_TOO_MANY_ROWS.format(sheet=name, limit=limits.max_rows))
    if cols > limits.max_columns:
        raise UnreadableSheet(
            MSG_TOO_MANY_COLUMNS.format(sheet=name, row=rows, col=cols, limit=limits.max_columns)
        )
    if rows * cols > limits.max_dense_cells:
        raise UnreadableSheet(
            MSG_DENSE.format(
                sheet=name, rows=rows, cols=cols, cells=rows * cols, limit=limits.max_dense_cells
            )
        )
    return extent
