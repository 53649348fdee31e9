"""Read an uploaded price sheet (CSV, TSV, XLSX) into a normalized ``Table``.

The table is the job's checkpoint: plain strings with their coordinates,
JSON-serializable, so a replacement worker never reads the file again.

Safety: the format is decided from the bytes, not the name; XLSX archives are
checked (member count, uncompressed size, compression ratio, no DTD in any
XML part) before they are parsed, and the streaming reader in
``catalog.xlsx`` refuses any DTD or entity declaration it meets. Rows are
streamed (no workbook held), so memory grows with the text kept, not with
the XML.
"""

from __future__ import annotations

import bisect
import csv
import datetime as dt
import io
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from catalog.errors import UnreadableSheet

CSV_SHEET_NAME = "Sheet1"

# Error messages (operators read these as the job's reason).
MSG_EMPTY = "the file is empty (0 bytes)"
MSG_XLS = (
    "XLS (Excel 97-2003) or a password-protected workbook is not supported: "
    "save it as XLSX or CSV"
)
MSG_TOO_MANY_ROWS = "sheet {sheet!r} has more than {limit} rows (limit {limit})"
MSG_TOO_MANY_COLUMNS = (
    "sheet {sheet!r} row {row} has a value in column {col} (limit {limit} columns)"
)
MSG_ZIP_MEMBERS = "XLSX rejected: {count} zip members (limit {limit})"
MSG_ZIP_SIZE = "XLSX rejected: {size} bytes uncompressed (limit {limit})"
MSG_ZIP_RATIO = (
    "XLSX rejected: member {name!r} expands {ratio:.0f}x (limit {limit:.0f}x); "
    "this looks like a zip bomb"
)
MSG_ZIP_TOTAL_RATIO = (
    "XLSX rejected: its parts expand {ratio:.0f}x in all (limit {limit:.0f}x); "
    "this looks like a zip bomb"
)
MSG_TOO_MANY_SHEETS = (
    "the workbook has {count} sheets (limit {limit}); split it or remove empty sheets"
)
MSG_WORKBOOK_ROWS = (
    "the workbook spans more than {limit} rows over all its sheets (sheet {sheet!r} "
    "reaches row {row}); split it or remove empty sheets"
)
MSG_CELL_TOO_LONG = (
    "row {row} has a cell longer than {limit} characters; a spreadsheet cell holds "
    "at most 32,767: check that the file is really a CSV"
)
MSG_DTD = (
    "XLSX rejected: {name!r} declares a DTD/entities; spreadsheets never need "
    "one and entity expansion is refused"
)

MAGIC_ZIP = b"PK\x03\x04"
MAGIC_ZIP_EMPTY = b"PK\x05\x06"
MAGIC_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
# Other things people upload by mistake, named so the reason is useful.
_BINARY_KINDS = (
    (b"%PDF", "a PDF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"Rar!", "a RAR archive"),
    (b"7z\xbc\xaf", "a 7-Zip archive"),
)
_TEXT_EXTENSIONS = {".csv", ".tsv", ".txt", ".tab"}
_XLSX_EXTENSIONS = {".xlsx", ".xlsm", ".xltx", ".xltm"}
DELIMITERS = (",", ";", "\t", "|")


@dataclass(frozen=True)
class ReadLimits:
    max_rows: int = 150_000
    max_columns: int = 1_000
    # Sheets read from one workbook (`MAX_SHEETS`); more is refused, not cut.
    max_sheets: int = 50
    # Rows held over all sheets, blank rows below the last value of each
    # sheet not counted but blank rows between values counted: a lone cell at
    # row 150,000 of many sheets must not materialize millions of rows.
    max_workbook_rows: int = 300_000
    # Excel's own limit; longer text is cut at read time, before any pattern.
    max_cell_chars: int = 32_767
    max_zip_members: int = 10_000
    max_uncompressed_bytes: int = 256 * 1024 * 1024
    max_compression_ratio: float = 200.0
    # Parts below this size are judged together (the archive's overall ratio),
    # so many small high-ratio parts cannot slip under the per-part check.
    ratio_min_part_bytes: int = 64 * 1024


@dataclass(frozen=True)
class Sheet:
    """One sheet: ``rows[i]`` is spreadsheet row ``i + 1``.

    Cells are display text with outer whitespace stripped, ``''`` when empty;
    trailing empty cells and trailing empty rows are trimmed.
    ``currency_formats`` carries currencies that exist only in a cell's number
    format (e.g. ``"£"#,##0.00``): column index (0-based) -> runs
    ``(first_row, last_row, ISO code)`` with 1-based inclusive rows.
    ``raw`` keeps, for XLSX numbers whose display differs from the stored
    value or that a formula computed, ``"row:col"`` (1-based row, 0-based column) -> ``{"value": stored
    value as text, "formula": bool}``; the cell text itself is what the number
    format displays.
    """

    name: str
    rows: list[list[str]]
    currency_formats: dict[int, list[tuple[int, int, str]]] = field(default_factory=dict)
    raw: dict[str, dict] = field(default_factory=dict)

    def raw_value(self, row: int, col: int) -> dict | None:
        """The stored value behind cell (row 1-based, col 0-based), when it differs or is computed."""
        return self.raw.get(f"{row}:{col}")

    def format_currency(self, row: int, col: int) -> str | None:
        """The currency of cell (row 1-based, col 0-based)'s number format, if any."""
        runs = self.currency_formats.get(col)
        if not runs:
            return None
        i = bisect.bisect_right(runs, (row, float("inf"), "")) - 1
        if i >= 0:
            first, last, code = runs[i]
            if first <= row <= last:
                return code
        return None


@dataclass(frozen=True)
class Table:
    sheets: list[Sheet]

    def to_json(self) -> dict:
        return {
            "sheets": [
                {
                    "name": s.name,
                    "rows": s.rows,
                    "currency_formats": {
                        str(col): [list(run) for run in runs]
                        for col, runs in s.currency_formats.items()
                    },
                    **({"raw": s.raw} if s.raw else {}),
                }
                for s in self.sheets
            ]
        }

    @classmethod
    def from_json(cls, d: dict) -> "Table":
        return cls(
            sheets=[
                Sheet(
                    name=s["name"],
                    rows=[list(r) for r in s["rows"]],
                    currency_formats={
                        int(col): [(int(a), int(b), str(c)) for a, b, c in runs]
                        for col, runs in (s.get("currency_formats") or {}).items()
                    },
                    raw=dict(s.get("raw") or {}),
                )
                for s in d["sheets"]
            ]
        )

    def sheet(self, name: str) -> Sheet | None:
        for s in self.sheets:
            if s.name == name:
                return s
        return None


def read_table(path, *, filename: str, limits: ReadLimits | None = None) -> Table:
    """Read the file at ``path``; ``filename`` is the name the user gave it."""
    return read_bytes(Path(path).read_bytes(), filename=filename, limits=limits)


def read_bytes(data: bytes, *, filename: str, limits: ReadLimits | None = None) -> Table:
    """Read an uploaded sheet's bytes; ``filename`` is the name the user gave it."""
    limits = limits or ReadLimits()
    ext = Path(filename).suffix.lower()
    head = data[:8]
    if not head:
        raise UnreadableSheet(MSG_EMPTY)
    claimed = "XLSX" if ext in _XLSX_EXTENSIONS else "CSV" if ext in _TEXT_EXTENSIONS else None

    if head.startswith(MAGIC_OLE2):
        raise UnreadableSheet(MSG_XLS)
    if head.startswith(MAGIC_ZIP) or head.startswith(MAGIC_ZIP_EMPTY):
        # Content wins over a wrong ".csv" name: a ZIP workbook is unambiguous.
        return _read_xlsx(data, limits)
    for magic, kind in _BINARY_KINDS:
        if head.startswith(magic):
            raise UnreadableSheet(
                f"the file is {kind}, not a spreadsheet"
                + (f" (its name says {claimed})" if claimed else "")
            )
    if ext == ".xls":
        raise UnreadableSheet(
            "the name says XLS (Excel 97-2003) but the bytes are not an Excel "
            "workbook; save it as XLSX or CSV"
        )
    if claimed == "XLSX":
        # A text file named .xlsx is usually an HTML error page or a renamed
        # CSV; reading it as CSV would hide the mistake.
        raise UnreadableSheet(
            "the name says XLSX but the bytes are not a ZIP workbook "
            "(they look like text); upload the real workbook or rename it to .csv"
        )
    return _read_csv(data, limits, tab_hint=ext in (".tsv", ".tab"))


# --------------------------------------------------------------------- CSV


MSG_CUT_UTF16 = ("the file is UTF-16 text that ends in the middle of a character (an odd "
                 "number of bytes): it was cut short; save or export it again")
MSG_NUL = ("line {line} holds a NUL character, which no text cell can: the file is not a "
           "plain text CSV; save it again as CSV or XLSX")


def _decode(data: bytes) -> str:
    text = _decode_bytes(data)
    # A NUL can be neither stored nor published (PostgreSQL text refuses it):
    # refused here, every time, rather than failing each attempt later.
    at = text.find("\x00")
    if at >= 0:
        raise UnreadableSheet(MSG_NUL.format(line=text.count("\n", 0, at) + 1))
    return text


def _decode_bytes(data: bytes) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise UnreadableSheet(MSG_CUT_UTF16) from None
    if b"\x00" in data[:4096]:
        raise UnreadableSheet(
            "the bytes are not text (NUL bytes found) and not an XLSX workbook: "
            "not a CSV file"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    # Legacy single-byte encodings only: by now we know it is not UTF-8.
    best = from_bytes(
        data[:200_000],
        cp_isolation=["cp1251", "cp1252", "cp1250", "koi8_r", "latin_1", "iso8859_2", "cp1254"],
    ).best()
    encoding = best.encoding if best is not None else "cp1252"
    # The detector can pick a neighbouring code page; the language decides.
    from catalog.codepages import best_code_page

    encoding = best_code_page(data, preferred=encoding)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _sniff_delimiter(text: str, tab_hint: bool) -> str:
    sample = text[:65536].splitlines()[:50]
    best, best_score = ("\t" if tab_hint else ","), (-1.0, 0)
    for delim in DELIMITERS:
        counts = [len(r) for r in csv.reader(sample, delimiter=delim) if any(c.strip() for c in r)]
        if not counts:
            continue
        mode = max(set(counts), key=counts.count)
        if mode < 2:
            continue
        score = (counts.count(mode) / len(counts), mode)
        if tab_hint and delim == "\t":
            score = (score[0] + 0.01, score[1])
        if score > best_score:
            best, best_score = delim, score
    return best


def _read_csv(data: bytes, limits: ReadLimits, *, tab_hint: bool) -> Table:
    # Trailing blank lines cost nothing (stripped at C speed); blank lines
    # between values are counted while streaming, never stored.
    text = _decode(data).rstrip()
    del data
    delim = _sniff_delimiter(text, tab_hint)
    rows: list[list[str]] = []
    max_rows, max_cols, max_chars = limits.max_rows, limits.max_columns, limits.max_cell_chars
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim)
    i = 0
    try:
        for i, raw in enumerate(reader, start=1):
            # Blank lines are counted, not stored: they become rows only when
            # a value follows them, so trailing blank lines cost nothing.
            if not raw or not any(raw):
                continue
            row = [c.strip() if len(c) <= max_chars else c.strip()[:max_chars] for c in raw]
            while row and not row[-1]:
                row.pop()
            if not row:
                continue
            if i > max_rows:
                raise UnreadableSheet(MSG_TOO_MANY_ROWS.format(sheet=CSV_SHEET_NAME, limit=max_rows))
            if len(row) > max_cols:
                raise UnreadableSheet(
                    MSG_TOO_MANY_COLUMNS.format(sheet=CSV_SHEET_NAME, row=i, col=len(row), limit=max_cols)
                )
            if i > len(rows) + 1:
                rows.extend([] for _ in range(i - 1 - len(rows)))
            rows.append(row)
    except csv.Error as exc:
        # The csv module refuses fields over its own limit (131,072 characters).
        raise UnreadableSheet(MSG_CELL_TOO_LONG.format(row=i + 1, limit=csv.field_size_limit())) from exc
    return Table(sheets=[Sheet(name=CSV_SHEET_NAME, rows=rows)])


# -------------------------------------------------------------------- XLSX


def _check_zip(data: bytes, limits: ReadLimits) -> None:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise UnreadableSheet("the file starts like a ZIP/XLSX but is damaged "
                              "(its table of contents cannot be read)") from exc
    with zf:
        infos = zf.infolist()
        if len(infos) > limits.max_zip_members:
            raise UnreadableSheet(MSG_ZIP_MEMBERS.format(count=len(infos), limit=limits.max_zip_members))
        total = sum(i.file_size for i in infos)
        if total > limits.max_uncompressed_bytes:
            raise UnreadableSheet(MSG_ZIP_SIZE.format(size=total, limit=limits.max_uncompressed_bytes))
        for info in infos:
            # A tiny part may legitimately compress very well (a few hundred
            # bytes of boilerplate); any part big enough to matter is judged.
            ratio = info.file_size / max(1, info.compress_size)
            if info.file_size > limits.ratio_min_part_bytes and ratio > limits.max_compression_ratio:
                raise UnreadableSheet(
                    MSG_ZIP_RATIO.format(name=info.filename, ratio=ratio, limit=limits.max_compression_ratio)
                )
        # Small parts are judged together, so many of them cannot add up to a
        # bomb one part at a time.
        compressed = sum(i.compress_size for i in infos)
        total_ratio = total / max(1, compressed)
        if total > limits.ratio_min_part_bytes and total_ratio > limits.max_compression_ratio:
            raise UnreadableSheet(
                MSG_ZIP_TOTAL_RATIO.format(ratio=total_ratio, limit=limits.max_compression_ratio))
        names = {i.filename for i in infos}
        if "xl/workbook.bin" in names:
            raise UnreadableSheet("XLSB (binary Excel workbook) is not supported: save it as XLSX or CSV")
        if "xl/workbook.xml" not in names:
            raise UnreadableSheet("the file is a ZIP archive but not an XLSX workbook (no xl/workbook.xml)")
        # zipfile stops each member at its declared size (and checks the CRC),
        # so the sizes above bound what the reader can inflate. A DTD can still
        # expand entities inside that size: refuse any XML part declaring one.
        for info in infos:
            if info.filename.endswith((".xml", ".rels", ".vml")):
                try:
                    with zf.open(info) as member:
                        prolog = member.read(2048)
                except (zipfile.BadZipFile, NotImplementedError, OSError, ValueError, EOFError) as exc:
                    raise UnreadableSheet(
                        f"the XLSX part {info.filename!r} is damaged or uses an unsupported compression"
                    ) from exc
                if b"<!DOCTYPE" in prolog or b"<!ENTITY" in prolog:
                    raise UnreadableSheet(MSG_DTD.format(name=info.filename))


def _cell_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return ""
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        # 15 significant digits: what Excel shows, without binary noise
        # (926.6400000000001 -> 926.64).
        text = format(value, ".15g")
        if "e" in text:
            text = format(value, "f").rstrip("0").rstrip(".")
        return text
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0):
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return str(value)
    return str(value).strip()


# Bracketed parts never span another "[": a format of many "[" costs one
# scan, not one per "[" (the patterns stay linear in the format's length).
_FMT_BRACKET = re.compile(r"\[\$([^\[\]\-]*)(?:-([0-9A-Fa-f]+))?\]")
_FMT_QUOTED = re.compile(r'"([^"]*)"')
# "$" means a currency only with a locale that says which dollar.
_DOLLAR_LCID = {
    "409": "USD", "1009": "CAD", "c09": "AUD", "1409": "NZD", "80a": "MXN",
    "2c0a": "ARS", "340a": "CLP", "240a": "COP", "3409": "USD", "4809": "SGD",
    "3c09": "HKD", "410": "USD",
}
_format_cache: dict[str, str | None] = {}


def currency_from_number_format(fmt: str | None) -> str | None:
    """The ISO currency a number format displays, or None (also when unsure)."""
    if not fmt or fmt == "General":
        return None
    try:
        return _format_cache[fmt]
    except KeyError:
        pass
    from catalog.extraction.money import detect_currency

    found: set[str] = set()
    for symbol, lcid in _FMT_BRACKET.findall(fmt):
        if symbol == "$":
            code = _DOLLAR_LCID.get((lcid or "").lower())
        else:
            code = detect_currency(symbol)
        if code:
            found.add(code)
    rest = _FMT_BRACKET.sub("", fmt)
    for literal in _FMT_QUOTED.findall(rest):
        code = detect_currency(literal)
        if code:
            found.add(code)
    bare = _FMT_QUOTED.sub("", rest).replace("\\", "")
    code = detect_currency(re.sub(r"[#0?.,;_*@%()\-+ ]", " ", bare))
    if code:
        found.add(code)
    result = found.pop() if len(found) == 1 else None
    _format_cache[fmt] = result
    return result


_FMT_DROP = re.compile(r'"[^"]*+"|\[[^\[\]]*+\]|\\.|_.|\*.')
_FMT_PLACES = re.compile(r"\.([0#?]++)")


def decimal_places_of_format(fmt: str | None) -> int | None:
    """Decimals a number format shows ("0.00" -> 2, "#,##0" -> 0); None for General,
    percentages, fractions, scientific and text formats (shown as stored)."""
    if not fmt or fmt == "General":
        return None
    first = _FMT_DROP.sub("", fmt.split(";", 1)[0])
    if not any(ch in first for ch in "0#?") or any(ch in first for ch in "%/Ee@"):
        return None
    m = _FMT_PLACES.search(first)
    return m.group(1).count("0") if m else 0


def _displayed_number(value, places: int | None, raw: dict, key: str, formula: bool = False) -> str:
    """The text a number shows under its format; the stored value goes to ``raw``
    when it differs or when a formula computed it."""
    stored = _cell_text(value)
    text = stored
    if places is not None and stored:
        from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

        try:
            shown = Decimal(stored).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
            text = format(shown, "f")
        except InvalidOperation:
            text = stored
    if text != stored or formula:
        raw[key] = {"value": stored, "formula": formula}
    return text


def _read_xlsx(data: bytes, limits: ReadLimits) -> Table:
    _check_zip(data, limits)
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
        raise UnreadableSheet("the XLSX workbook cannot be read: a cell refers to a shared "
                              "string or style the workbook does not contain") from exc
    except (zipfile.BadZipFile, NotImplementedError, OSError, ValueError, EOFError) as exc:
        raise UnreadableSheet(f"the XLSX workbook cannot be read: {_plain(exc)}") from exc


def _plain(exc: Exception) -> str:
    """An exception as a short reason: its type and first line, never a path
    (the bytes are read from memory, so none should appear anyway)."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    text = re.sub(r"(?<![\w.])/(?:[^\s/'\"]+/)+[^\s'\"]*", "<path>", text)[:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _read_workbook(book, limits: ReadLimits) -> Table:
    if len(book.worksheets) > limits.max_sheets:
        raise UnreadableSheet(MSG_TOO_MANY_SHEETS.format(count=len(book.worksheets), limit=limits.max_sheets))
    # style id -> currency of its number format, computed once per style.
    style_currency = [currency_from_number_format(fmt) for fmt in book.style_formats]
    style_places = [decimal_places_of_format(fmt) for fmt in book.style_formats]
    held = [0]  # rows held over the whole workbook
    sheets = [_read_worksheet(book, ws, (style_currency, style_places), limits, held) for ws in book.worksheets]
    if not sheets:
        raise UnreadableSheet("the XLSX workbook has no worksheets")
    return Table(sheets=sheets)


def _read_worksheet(book, ws, styles: tuple[list, list], limits: ReadLimits,
                    held: list[int]) -> Sheet:
    """``styles``: per style id, the currency and the decimals its number format shows."""
    rows: list[list[str]] = []
    raw: dict[str, dict] = {}
    runs: dict[int, list[list]] = {}
    last_valued: dict[int, int] = {}
    for idx, cells in book.rows(ws):
        row = _row_texts(cells, idx, ws.title, styles, runs, last_valued, limits, raw)
        if not row:
            continue
        if idx > limits.max_rows:
            raise UnreadableSheet(MSG_TOO_MANY_ROWS.format(sheet=ws.title, limit=limits.max_rows))
        if idx > len(rows):
            # Rows are held up to the last valued one: bound them over the
            # workbook before the gap is filled.
            held[0] += idx - len(rows)
            if held[0] > limits.max_workbook_rows:
                raise UnreadableSheet(MSG_WORKBOOK_ROWS.format(
                    limit=limits.max_workbook_rows, sheet=ws.title, row=idx))
            rows.extend([] for _ in range(idx - 1 - len(rows)))
            rows.append(row)
        else:  # a repeated <row r=..>: later wins
            rows[idx - 1] = row
    return Sheet(name=ws.title, rows=rows,
                 currency_formats={c: [tuple(r) for r in rs] for c, rs in runs.items()}, raw=raw)


def _row_texts(cells, idx: int, title: str, styles: tuple[list, list],
               runs: dict[int, list[list]], last_valued: dict[int, int],
               limits: ReadLimits, raw: dict[str, dict]) -> list[str]:
    """One row's display texts (a number as its format shows it, the stored
    value kept in ``raw``); notes the runs of currency number formats."""
    style_currency, style_places = styles
    row: list[str] = []
    for col, value, style_id, formula in cells:
        if value is None:
            continue
        code = style_currency[style_id] if 0 < style_id < len(style_currency) else None
        if code is not None:
            _extend_run(runs, last_valued, col, idx, code)
        last_valued[col] = idx
        if type(value) in (int, float) and (formula or 0 < style_id < len(style_places)):
            places = style_places[style_id] if 0 < style_id < len(style_places) else None
            text = _displayed_number(value, places, raw, f"{idx}:{col}", formula)
        else:
            text = value.strip() if type(value) is str else _cell_text(value)
        if len(text) > limits.max_cell_chars:
            text = text[:limits.max_cell_chars]  # stripped already; a cut text keeps its full length
        if not text:
            continue
        if col >= limits.max_columns:
            raise UnreadableSheet(
                MSG_TOO_MANY_COLUMNS.format(sheet=title, row=idx, col=col + 1, limit=limits.max_columns))
        if col >= len(row):
            row.extend([""] * (col - len(row)))
            row.append(text)
        else:
            row[col] = text
    return row


def _extend_run(runs: dict[int, list[list]], last_valued: dict[int, int], col: int, idx: int,
                code: str) -> None:
    col_runs = runs.setdefault(col, [])
    last = col_runs[-1] if col_runs else None
    # Extend the run only over rows whose cell in this column had no value:
    # a valued cell without the currency format must not inherit it.
    if last is not None and last[2] == code and last[1] == last_valued.get(col):
        last[1] = idx
    else:
        col_runs.append([idx, idx, code])
