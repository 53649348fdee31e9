"""ODS (OpenDocument spreadsheet): a streaming expat reader of ``content.xml``.

An ODS cell carries both what it shows (its ``<text:p>``) and what it stores
(``office:value``, ``office:date-value``, ...), so a number reads as its
format displays it: the stored value rounded to the decimals the cell shows,
the stored value kept in the sheet's ``raw`` (as for XLSX); a currency cell
names its ISO code (``office:currency``). Repeated rows and columns are
counted, not expanded, unless they hold values (then the row and column
limits apply before anything is held); spanned cells are merged ranges and
are filled. The archive passes the same ZIP checks as an XLSX, and a DTD or
entity declaration is refused.

python-calamine also reads ODS (and is measured in `bench/parse_speed.py`),
but gives the stored value without what the cell shows, and expands
repeated cells into a dense range before any limit can apply.
"""

from __future__ import annotations

import io
import re
import zipfile
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from xml.parsers import expat

from catalog.errors import UnreadableSheet
from catalog.readers.common import (
    MSG_TOO_MANY_COLUMNS,
    MSG_TOO_MANY_ROWS,
    MSG_TOO_MANY_SHEETS,
    MSG_WORKBOOK_ROWS,
    ReadLimits,
    Sheet,
    Table,
    _cell_text,
    check_zip,
    fill_merged,
    error_text,
)

TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
SEP = "}"
CHUNK = 1 << 16
MSG_UNREADABLE = "the ODS workbook cannot be read: {detail}"
_NUMERIC = {"float", "currency", "percentage"}
_DIGITS = re.compile(r"\d")


def read(data: bytes, *, limits: ReadLimits, filename: str = "") -> Table:
    names = check_zip(data, limits, kind="ODS")
    if "content.xml" not in names:
        raise UnreadableSheet("the ODS file has no content.xml: it is damaged")
    reader = _ContentReader(limits)
    from catalog.xlsx import XlsxError, safe_parser

    parser = safe_parser(
        StartElementHandler=reader.start, EndElementHandler=reader.end, CharacterDataHandler=reader.text
    )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf, zf.open("content.xml") as part:
            while chunk := part.read(CHUNK):
                parser.Parse(chunk, False)
            parser.Parse(b"", True)
    except UnreadableSheet:
        raise
    except XlsxError as exc:
        raise UnreadableSheet(MSG_UNREADABLE.format(detail=str(exc))) from exc
    except expat.ExpatError as exc:
        raise UnreadableSheet(
            MSG_UNREADABLE.format(
                detail=f"content.xml is not well-formed XML ({expat.errors.messages[exc.code]})"
            )
        ) from exc
    except (zipfile.BadZipFile, NotImplementedError, OSError, ValueError, EOFError) as exc:
        raise UnreadableSheet(MSG_UNREADABLE.format(detail=error_text(exc))) from exc
    if not reader.sheets:
        raise UnreadableSheet("the ODS workbook has no tables")
    return Table(sheets=reader.sheets)


def shown_number(stored: str, shown: str) -> str | None:
    """The stored number rounded to the decimals ``shown`` displays ("8.52" for
    8.5232744625 shown as "8,52 €"), or None when the display is not the
    number in another dress (a percentage, a fraction, scientific)."""
    try:
        value = Decimal(stored)
    except InvalidOperation:
        return None
    digits = "".join(_DIGITS.findall(shown))
    for places in range(0, 11):
        text = format(value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP), "f")
        candidate = text.lstrip("-").replace(".", "")
        if candidate == digits or candidate.lstrip("0") == digits.lstrip("0") and digits:
            return text
    return None


class _ContentReader:
    """expat callbacks over content.xml: one ``Sheet`` per top-level table."""

    T_TABLE, T_ROW, T_CELL, T_COVERED = (
        TABLE + SEP + n for n in ("table", "table-row", "table-cell", "covered-table-cell")
    )
    P, S, TAB, BREAK = (TEXT + SEP + n for n in ("p", "s", "tab", "line-break"))
    ANNOTATION = OFFICE + SEP + "annotation"

    def __init__(self, limits: ReadLimits):
        self.limits = limits
        self.sheets: list[Sheet] = []
        self.held = 0  # rows held over the workbook
        self.table_depth = 0  # tables inside cells (subtables) are not read
        self.skip = 0  # inside an annotation: its text is not the cell's
        self.in_cell = False
        self.row_index = 0

    # --- structure -------------------------------------------------------------

    def start(self, name, attrs):
        if name == self.T_TABLE:
            self.table_depth += 1
            if self.table_depth == 1:
                self._begin_table(attrs)
        elif self.table_depth != 1:
            return
        elif name == self.T_ROW:
            self._begin_row(_count(attrs, "number-rows-repeated"))
        elif name in (self.T_CELL, self.T_COVERED):
            self._begin_cell(attrs)
        elif name == self.ANNOTATION:
            self.skip += 1
        elif self.in_cell and not self.skip:
            self._text_element(name, attrs)

    def end(self, name):
        if name == self.T_TABLE:
            if self.table_depth == 1:
                self._end_table()
            self.table_depth -= 1
        elif self.table_depth != 1:
            return
        elif name == self.ANNOTATION:
            self.skip -= 1
        elif name == self.P and self.in_cell and not self.skip:
            self.paragraphs.append("".join(self.buf))
            self.buf = []
        elif name in (self.T_CELL, self.T_COVERED):
            self._end_cell()
        elif name == self.T_ROW:
            self._end_row()

    def text(self, data):
        if self.in_cell and not self.skip and self.table_depth == 1:
            self.buf.append(data)

    def _text_element(self, name, attrs):
        if name == self.S:
            self.buf.append(" " * min(_count(attrs, "c", ns=TEXT), 1000))
        elif name == self.TAB:
            self.buf.append("\t")
        elif name == self.BREAK:
            self.buf.append("\n")

    # --- tables and rows -------------------------------------------------------------

    def _begin_table(self, attrs):
        if len(self.sheets) >= self.limits.max_sheets:
            raise UnreadableSheet(
                MSG_TOO_MANY_SHEETS.format(
                    count=f"more than {len(self.sheets)}", limit=self.limits.max_sheets
                )
            )
        self.title = attrs.get(TABLE + SEP + "name", f"Sheet{len(self.sheets) + 1}")
        self.rows: list[list[str]] = []
        self.raw: dict[str, dict] = {}
        self.currency: dict[int, list[tuple[int, int, str]]] = {}
        self.merges: list[tuple[int, int, int, int]] = []
        self.row_index = 0
        self._begin_row(1)

    def _end_table(self):
        sheet = Sheet(name=self.title, rows=self.rows, currency_formats=self.currency, raw=self.raw)
        self.sheets.append(fill_merged(sheet, self.merges, self.limits))

    def _begin_row(self, repeat: int):
        self.row_cells: list[tuple[int, str]] = []
        self.row_raw: dict[int, dict] = {}
        self.row_currency: dict[int, str] = {}
        self.col = 0
        self.row_repeat = repeat

    def _end_row(self):
        first = self.row_index + 1
        self.row_index += self.row_repeat
        if not self.row_cells:
            return  # empty rows, however many, are counted only
        limits = self.limits
        if self.row_index > limits.max_rows:
            raise UnreadableSheet(MSG_TOO_MANY_ROWS.format(sheet=self.title, limit=limits.max_rows))
        self.held += self.row_index - len(self.rows)
        if self.held > limits.max_workbook_rows:
            raise UnreadableSheet(
                MSG_WORKBOOK_ROWS.format(limit=limits.max_workbook_rows, sheet=self.title, row=self.row_index)
            )
        row: list[str] = [""] * (self.row_cells[-1][0] + 1)
        for col, text in self.row_cells:
            row[col] = text
        self.rows.extend([] for _ in range(first - 1 - len(self.rows)))
        for r in range(first, self.row_index + 1):
            self.rows.append(list(row))
            for col, raw in self.row_raw.items():
                self.raw[f"{r}:{col}"] = raw
            for col, code in self.row_currency.items():
                self._note_currency(col, r, code)

    def _note_currency(self, col: int, row: int, code: str):
        runs = self.currency.setdefault(col, [])
        if runs and runs[-1][2] == code and runs[-1][1] == row - 1:
            runs[-1] = (runs[-1][0], row, code)
        else:
            runs.append((row, row, code))

    # --- cells ---------------------------------------------------------------------

    def _begin_cell(self, attrs):
        self.in_cell = True
        self.cell_attrs = attrs
        self.paragraphs: list[str] = []
        self.buf: list[str] = []

    def _end_cell(self):
        attrs, self.in_cell = self.cell_attrs, False
        repeat = _count(attrs, "number-columns-repeated")
        text, raw = self._cell_value(attrs)
        first = self.col
        self.col += repeat
        if not text:
            return
        limits = self.limits
        if self.col > limits.max_columns:
            raise UnreadableSheet(
                MSG_TOO_MANY_COLUMNS.format(
                    sheet=self.title, row=self.row_index + 1, col=self.col, limit=limits.max_columns
                )
            )
        span_rows, span_cols = _count(attrs, "number-rows-spanned"), _count(attrs, "number-columns-spanned")
        if span_rows > 1 or span_cols > 1:
            r0 = self.row_index
            self.merges.append((r0, r0 + span_rows - 1, first, first + span_cols - 1))
        code = (
            attrs.get(OFFICE + SEP + "currency")
            if attrs.get(OFFICE + SEP + "value-type") == "currency"
            else None
        )
        for col in range(first, self.col):
            self.row_cells.append((col, text))
            if raw is not None:
                self.row_raw[col] = raw
            if code:
                self.row_currency[col] = code.upper()

    def _cell_value(self, attrs) -> tuple[str, dict | None]:
        """The cell's text as the reader shows it, and its ``raw`` entry if any."""
        shown = "\n".join(p.strip() for p in self.paragraphs).strip()
        if self.buf:
            shown = (shown + "".join(self.buf)).strip()
        kind = attrs.get(OFFICE + SEP + "value-type")
        formula = (TABLE + SEP + "formula") in attrs
        stored = None
        if kind in _NUMERIC:
            stored = attrs.get(OFFICE + SEP + "value")
        elif kind == "date":
            stored = _date_text(attrs.get(OFFICE + SEP + "date-value", ""))
        elif kind == "boolean":
            stored = _cell_text(attrs.get(OFFICE + SEP + "boolean-value", "").lower() == "true")
        if stored is None:
            return shown[: self.limits.max_cell_chars], None
        if kind in _NUMERIC:
            try:
                number = float(stored)
            except ValueError:
                return shown[: self.limits.max_cell_chars], None
            stored = _cell_text(number)
            text = (shown_number(stored, shown) if kind != "percentage" else None) or stored
        else:
            text = stored
        raw = {"value": stored, "formula": formula} if text != stored or formula else None
        return text, raw


def _count(attrs, local: str, ns: str = TABLE) -> int:
    try:
        return max(1, int(attrs.get(ns + SEP + local, "1")))
    except ValueError:
        return 1


def _date_text(value: str) -> str | None:
    """An ISO date-value as the XLSX reader renders dates."""
    import datetime as dt

    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return _cell_text(moment)
