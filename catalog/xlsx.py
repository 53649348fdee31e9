"""A streaming XLSX reader on expat: cell values, style ids and number formats.

openpyxl's read-only mode builds an ElementTree element for every XML node
and a descriptor object for every shared string; this reader keeps only what
extraction needs and hands each worksheet row to the caller as it is parsed.
What it reads: the workbook's sheet list, shared strings (rich text runs
joined), the number format of every cell style, and per cell its column,
its value (text, number, boolean, a date for date formats, a formula's cached
value) and its style id. Any XML part with a DTD or an entity declaration is
refused, so no entity expansion ever happens.
"""

from __future__ import annotations

import datetime as dt
import posixpath
import re
import zipfile
from dataclasses import dataclass
from collections.abc import Iterator
from xml.parsers import expat

MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG_REL_NS = "http://schemas.openxmlformats.org/package/2006/relationships"
WORKSHEET_TYPE = REL_NS + "/worksheet"
SEP = "}"  # expat's namespace separator: "{ns}name" becomes "ns}name"
CHUNK = 1 << 16

# ECMA-376 Part 1, 18.8.30: the built-in number formats a file may refer to by id only.
BUILTIN_FORMATS = {
    0: "General",
    1: "0",
    2: "0.00",
    3: "#,##0",
    4: "#,##0.00",
    5: '"$"#,##0_);("$"#,##0)',
    6: '"$"#,##0_);[Red]("$"#,##0)',
    7: '"$"#,##0.00_);("$"#,##0.00)',
    8: '"$"#,##0.00_);[Red]("$"#,##0.00)',
    9: "0%",
    10: "0.00%",
    11: "0.00E+00",
    12: "# ?/?",
    13: "# ??/??",
    14: "mm-dd-yy",
    15: "d-mmm-yy",
    16: "d-mmm",
    17: "mmm-yy",
    18: "h:mm AM/PM",
    19: "h:mm:ss AM/PM",
    20: "h:mm",
    21: "h:mm:ss",
    22: "m/d/yy h:mm",
    37: "#,##0_);(#,##0)",
    38: "#,##0_);[Red](#,##0)",
    39: "#,##0.00_);(#,##0.00)",
    40: "#,##0.00_);[Red](#,##0.00)",
    44: '_("$"* #,##0.00_)_("$"* \\(#,##0.00\\)_("$"* "-"??_)_(@_)',
    45: "mm:ss",
    46: "[h]:mm:ss",
    47: "mmss.0",
    48: "##0.0E+0",
    49: "@",
}
# Literal text, quoted or escaped, and bracketed colours/conditions hide date letters.
_NOT_DATE = re.compile(r'"[^"]*"|\\.|\[[^\[\]]*\]')  # never spans another "[": linear
_DATE_LETTERS = re.compile(r"[dmyhs]", re.IGNORECASE)
EPOCH_1900 = dt.datetime(1899, 12, 30)
EPOCH_1904 = dt.datetime(1904, 1, 1)


class XlsxError(Exception):
    """The workbook cannot be read; the message is plain words."""


@dataclass(frozen=True)
class WorksheetRef:
    title: str
    path: str  # the part's name inside the ZIP


def is_date_format(fmt: str) -> bool:
    """True when a number format shows a date or time (Excel's own rule of thumb)."""
    if not fmt or fmt == "General" or fmt == "@":
        return False
    return bool(_DATE_LETTERS.search(_NOT_DATE.sub("", fmt)))


def _parser(**handlers) -> expat.XMLParserType:
    parser = expat.ParserCreate(namespace_separator=SEP)
    parser.buffer_text = True
    parser.ordered_attributes = False

    def refuse(*_args):
        raise XlsxError("an XML part declares a DTD or entities, which are refused")

    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.UnparsedEntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse
    for name, handler in handlers.items():
        setattr(parser, name, handler)
    return parser


# The same parser for the other XML-based readers (ODS, the XLSB relationships).
safe_parser = _parser


def _parse_part(zf: zipfile.ZipFile, name: str, parser: expat.XMLParserType) -> None:
    try:
        with zf.open(name) as part:
            while chunk := part.read(CHUNK):
                parser.Parse(chunk, False)
            parser.Parse(b"", True)
    except expat.ExpatError as exc:
        raise XlsxError(
            f"the XLSX part {name!r} is not well-formed XML ({expat.errors.messages[exc.code]})"
        ) from exc
    except RecursionError as exc:
        raise XlsxError(f"the XLSX part {name!r} is nested too deeply") from exc


class Workbook:
    """The parts of an XLSX that reading needs, parsed once."""

    def __init__(self, zf: zipfile.ZipFile):
        self._zf = zf
        self._names = set(zf.namelist())
        self.worksheets, self.date1904 = self._workbook()
        self.shared_strings = self._shared_strings()
        self.style_formats = self._styles()
        self._date_styles = [is_date_format(fmt) for fmt in self.style_formats]

    # --- workbook-level parts --------------------------------------------------

    def _rels(self, part: str) -> dict[str, tuple[str, str]]:
        folder, base = posixpath.split(part)
        rels_name = posixpath.join(folder, "_rels", base + ".rels")
        rels: dict[str, tuple[str, str]] = {}
        if rels_name not in self._names:
            return rels

        def start(name, attrs):
            if name == PKG_REL_NS + SEP + "Relationship":
                target = attrs.get("Target", "")
                if attrs.get("TargetMode") != "External":
                    target = posixpath.normpath(
                        target.lstrip("/") if target.startswith("/") else posixpath.join(folder, target)
                    )
                rels[attrs.get("Id", "")] = (attrs.get("Type", ""), target)

        _parse_part(self._zf, rels_name, _parser(StartElementHandler=start))
        return rels

    def _workbook(self) -> tuple[list[WorksheetRef], bool]:
        part = "xl/workbook.xml"
        sheets: list[tuple[str, str]] = []
        flags = {"date1904": False}

        def start(name, attrs):
            if name == MAIN_NS + SEP + "sheet":
                sheets.append((attrs.get("name", ""), attrs.get(REL_NS + SEP + "id", "")))
            elif name == MAIN_NS + SEP + "workbookPr":
                flags["date1904"] = attrs.get("date1904", "").lower() in ("1", "true")

        _parse_part(self._zf, part, _parser(StartElementHandler=start))
        rels = self._rels(part)
        refs = []
        for title, rid in sheets:
            kind, target = rels.get(rid, ("", ""))
            # Chartsheets and dialog sheets hold no cells.
            if kind == WORKSHEET_TYPE and target in self._names:
                refs.append(WorksheetRef(title=title, path=target))
        return refs, flags["date1904"]

    def _shared_strings(self) -> list[str]:
        part = "xl/sharedStrings.xml"
        if part not in self._names:
            return []
        strings: list[str] = []
        state = {"in_si": False, "in_t": False, "skip": 0}
        buf: list[str] = []
        si, t, rph = MAIN_NS + SEP + "si", MAIN_NS + SEP + "t", MAIN_NS + SEP + "rPh"

        def start(name, attrs):
            if name == si:
                state["in_si"] = True
                buf.clear()
            elif name == rph:
                state["skip"] += 1  # phonetic guides are not part of the text
            elif name == t and state["in_si"] and not state["skip"]:
                state["in_t"] = True

        def end(name):
            if name == si:
                strings.append("".join(buf))
                state["in_si"] = False
            elif name == rph:
                state["skip"] -= 1
            elif name == t:
                state["in_t"] = False

        def text(data):
            if state["in_t"]:
                buf.append(data)

        _parse_part(
            self._zf,
            part,
            _parser(StartElementHandler=start, EndElementHandler=end, CharacterDataHandler=text),
        )
        return strings

    def _styles(self) -> list[str]:
        """The number format of every cell style (cellXfs), by style id."""
        part = "xl/styles.xml"
        if part not in self._names:
            return []
        custom: dict[int, str] = {}
        formats: list[str] = []
        state = {"in_xfs": False}
        numfmt, cellxfs, xf = (MAIN_NS + SEP + n for n in ("numFmt", "cellXfs", "xf"))

        def start(name, attrs):
            if name == numfmt:
                custom[_int(attrs.get("numFmtId"))] = attrs.get("formatCode", "General")
            elif name == cellxfs:
                state["in_xfs"] = True
            elif name == xf and state["in_xfs"]:
                formats.append(attrs.get("numFmtId", "0"))

        def end(name):
            if name == cellxfs:
                state["in_xfs"] = False

        _parse_part(self._zf, part, _parser(StartElementHandler=start, EndElementHandler=end))
        return [custom.get(_int(i)) or BUILTIN_FORMATS.get(_int(i), "General") for i in formats]

    # --- cells ---------------------------------------------------------------------

    def rows(
        self,
        sheet: WorksheetRef,
        merges: list | None = None,
    ) -> Iterator[tuple[int, list[tuple[int, object, int, bool]]]]:
        """Each row that has cells: (1-based row, [(0-based column, value, style id,
        whether a formula computed the value)]). The sheet's merged ranges, which
        follow its rows in the XML, are appended to ``merges`` as
        ``(first_row, last_row, first_col, last_col)``, 0-based and inclusive."""
        reader = _SheetReader(self, merges)
        parser = _parser(
            StartElementHandler=reader.start, EndElementHandler=reader.end, CharacterDataHandler=reader.text
        )
        try:
            with self._zf.open(sheet.path) as part:
                while chunk := part.read(CHUNK):
                    parser.Parse(chunk, False)
                    yield from reader.take()
                parser.Parse(b"", True)
        except expat.ExpatError as exc:
            raise XlsxError(
                f"the sheet {sheet.title!r} is not well-formed XML ({expat.errors.messages[exc.code]})"
            ) from exc
        yield from reader.take()

    def cell_value(self, kind: str, raw: str, style: int) -> object:
        """A cell's value from its type attribute and its <v>/<is> text."""
        if kind == "s":
            return self.shared_strings[int(raw)] if raw else None
        if kind in ("str", "inlineStr"):
            return raw
        if kind == "b":
            return raw.strip() in ("1", "true")
        if kind == "e":
            return raw  # "#N/A", "#REF!": shown as written
        if not raw:
            return None
        try:
            number = float(raw)
        except ValueError:
            return raw  # a number cell holding text: shown as written
        if style < len(self._date_styles) and self._date_styles[style]:
            return self._date(number)
        return int(number) if number.is_integer() and "." not in raw and "E" not in raw.upper() else number

    def _date(self, serial: float) -> object:
        epoch = EPOCH_1904 if self.date1904 else EPOCH_1900
        if not self.date1904 and serial < 60:
            serial += 1  # Excel's fictitious 1900-02-29
        try:
            moment = epoch + dt.timedelta(days=serial)
        except OverflowError:
            return serial
        if 0 <= serial < 1:
            return moment.time()
        return moment


def _int(text: str | None) -> int:
    try:
        return int(text or 0)
    except ValueError:
        return 0


_COLUMN = re.compile(r"([A-Z]{1,3})")
_CELL_REF = re.compile(r"^[A-Z]{1,3}[0-9]{1,7}$")
_ROW_DIGITS = re.compile(r"[0-9]{1,7}$")


def column_index(ref: str) -> int:
    """0-based column of a cell reference such as "AB12"."""
    letters = _COLUMN.match(ref)
    if not letters:
        raise XlsxError(f"a cell reference {ref[:20]!r} is not valid")
    index = 0
    for ch in letters.group(1):
        index = index * 26 + ord(ch) - 64
    return index - 1


class _SheetReader:
    """expat callbacks that collect one sheet's rows, handed out as they end."""

    ROW, C, V, IS, T, F, MERGE = (MAIN_NS + SEP + n for n in ("row", "c", "v", "is", "t", "f", "mergeCell"))

    def __init__(self, book: Workbook, merges: list | None = None):
        self.book = book
        self.merges = merges
        self.done: list[tuple[int, list[tuple[int, object, int, bool]]]] = []
        self.row_index = 0
        self.cells: list[tuple[int, object, int, bool]] = []
        self.formula = False
        self.next_col = 0
        self.kind = ""
        self.style = 0
        self.col = 0
        self.capture = False
        self.buf: list[str] = []

    def start(self, name, attrs):
        if name == self.C:
            ref = attrs.get("r")
            self.col = column_index(ref) if ref else self.next_col
            self.kind = attrs.get("t", "n")
            self.style = _int(attrs.get("s"))
            self.formula = False
            self.buf = []
        elif name == self.F:
            self.formula = True
        elif name == self.V or (name == self.T and self.kind == "inlineStr"):
            self.capture = True
        elif name == self.ROW:
            r = attrs.get("r")
            self.row_index = _int(r) if r else self.row_index + 1
            self.cells = []
            self.next_col = 0
        elif name == self.MERGE and self.merges is not None:
            self._merge(attrs.get("ref") or "")

    def _merge(self, ref: str) -> None:
        first, _, last = ref.partition(":")
        if not (_CELL_REF.match(first) and _CELL_REF.match(last)):
            return  # a malformed range merges nothing
        self.merges.append(
            (
                _int(_ROW_DIGITS.search(first).group()) - 1,
                _int(_ROW_DIGITS.search(last).group()) - 1,
                column_index(first),
                column_index(last),
            )
        )

    def end(self, name):
        if name == self.C:
            value = self.book.cell_value(self.kind, "".join(self.buf), self.style)
            self.cells.append((self.col, value, self.style, self.formula))
            self.next_col = self.col + 1
        elif name in (self.V, self.T):
            self.capture = False
        elif name == self.ROW and self.cells:
            self.done.append((self.row_index, self.cells))

    def text(self, data):
        if self.capture:
            self.buf.append(data)

    def take(self):
        done, self.done = self.done, []
        return done
