"""What the readers share: the table they produce, the limits, the cell text
of a value, number formats, the ZIP checks every zipped format passes before
it is parsed, the rows of a workbook's cells, and merged ranges.

The table is the job's checkpoint: plain strings with their coordinates,
JSON-serializable, so a replacement worker never reads the file again.
"""

from __future__ import annotations

import bisect
import dataclasses
import datetime as dt
import io
import re
import zipfile
from dataclasses import dataclass, field

from catalog.errors import UnreadableSheet

CSV_SHEET_NAME = "Sheet1"

# Error messages (operators read these as the job's reason).
MSG_EMPTY = "the file is empty (0 bytes)"
MSG_TOO_MANY_ROWS = "sheet {sheet!r} has more than {limit} rows (limit {limit})"
MSG_TOO_MANY_COLUMNS = "sheet {sheet!r} row {row} has a value in column {col} (limit {limit} columns)"
MSG_ZIP_MEMBERS = "{kind} rejected: {count} zip members (limit {limit})"
MSG_ZIP_SIZE = "{kind} rejected: {size} bytes uncompressed (limit {limit})"
MSG_ZIP_RATIO = (
    "{kind} rejected: member {name!r} expands {ratio:.0f}x (limit {limit:.0f}x); this looks like a zip bomb"
)
MSG_ZIP_TOTAL_RATIO = (
    "{kind} rejected: its parts expand {ratio:.0f}x in all (limit {limit:.0f}x); this looks like a zip bomb"
)
MSG_TOO_MANY_SHEETS = "the workbook has {count} sheets (limit {limit}); split it or remove empty sheets"
MSG_WORKBOOK_ROWS = (
    "the workbook spans more than {limit} rows over all its sheets (sheet {sheet!r} "
    "reaches row {row}); split it or remove empty sheets"
)
MSG_CELL_TOO_LONG = (
    "row {row} has a cell longer than {limit} characters; a spreadsheet cell holds "
    "at most 32,767: check that the file is really a CSV"
)
MSG_MERGED_CELLS = (
    "sheet {sheet!r} merges more than {limit} cells in all; unmerge the ranges or split the sheet"
)
MSG_DTD = (
    "{kind} rejected: {name!r} declares a DTD/entities; spreadsheets never need "
    "one and entity expansion is refused"
)


@dataclass(frozen=True)
class ReadLimits:
    max_rows: int = 150_000
    max_columns: int = 1_000
    # Sheets read from one workbook (`MAX_SHEETS`); more is refused, not cut.
    max_sheets: int = 100
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
    # Cells of one sheet filled from merged ranges (a merge repeats its value).
    max_merged_cells: int = 1_000_000
    # Cells of a sheet's range (first to last cell) that a reader building it
    # densely (python-calamine, for XLSB) may hold: 5 million is ~200 MB there.
    max_dense_cells: int = 5_000_000
    # Pages read from one PDF (`MAX_PAGES`); more is refused, not cut.
    max_pages: int = 100


# The rows whose cells merged across columns a sheet keeps (``Sheet.spans``):
# at least the rows a header is looked for in (extraction.layout.HEADER_SCAN_ROWS),
# and at most this many ranges of them (the first; a header has far fewer).
SPAN_ROWS = 50
MAX_SPANS = 2_000


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
    # Cells merged across columns in the first SPAN_ROWS rows, where a header
    # is looked for: (row 1-based, first column 0-based) -> last column.
    spans: dict[tuple[int, int], int] = field(default_factory=dict)

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
                        str(col): [list(run) for run in runs] for col, runs in s.currency_formats.items()
                    },
                    **({"raw": s.raw} if s.raw else {}),
                    **({"spans": [[r, c, last] for (r, c), last in s.spans.items()]} if s.spans else {}),
                }
                for s in self.sheets
            ]
        }

    @classmethod
    def from_json(cls, d: dict) -> Table:
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
                    spans={(int(r), int(c)): int(last) for r, c, last in s.get("spans") or []},
                )
                for s in d["sheets"]
            ]
        )

    def sheet(self, name: str) -> Sheet | None:
        for s in self.sheets:
            if s.name == name:
                return s
        return None


# ------------------------------------------------------------- ZIP formats


def check_zip(data: bytes, limits: ReadLimits, *, kind: str) -> set[str]:
    """Refuse a zipped workbook (XLSX, XLSB, ODS) whose archive could cost more
    than the limits allow, before any part is parsed; its member names."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise UnreadableSheet(
            f"the file starts like a ZIP/{kind} but is damaged (its table of contents cannot be read)"
        ) from exc
    with zf:
        infos = zf.infolist()
        if len(infos) > limits.max_zip_members:
            raise UnreadableSheet(
                MSG_ZIP_MEMBERS.format(kind=kind, count=len(infos), limit=limits.max_zip_members)
            )
        total = sum(i.file_size for i in infos)
        if total > limits.max_uncompressed_bytes:
            raise UnreadableSheet(
                MSG_ZIP_SIZE.format(kind=kind, size=total, limit=limits.max_uncompressed_bytes)
            )
        for info in infos:
            # A tiny part may legitimately compress very well (a few hundred
            # bytes of boilerplate); any part big enough to matter is judged.
            ratio = info.file_size / max(1, info.compress_size)
            if info.file_size > limits.ratio_min_part_bytes and ratio > limits.max_compression_ratio:
                raise UnreadableSheet(
                    MSG_ZIP_RATIO.format(
                        kind=kind, name=info.filename, ratio=ratio, limit=limits.max_compression_ratio
                    )
                )
        # Small parts are judged together, so many of them cannot add up to a
        # bomb one part at a time.
        compressed = sum(i.compress_size for i in infos)
        total_ratio = total / max(1, compressed)
        if total > limits.ratio_min_part_bytes and total_ratio > limits.max_compression_ratio:
            raise UnreadableSheet(
                MSG_ZIP_TOTAL_RATIO.format(kind=kind, ratio=total_ratio, limit=limits.max_compression_ratio)
            )
        names = {i.filename for i in infos}
        # zipfile stops each member at its declared size (and checks the CRC),
        # so the sizes above bound what a reader can inflate. A DTD can still
        # expand entities inside that size: refuse any XML part declaring one.
        for info in infos:
            if info.filename.endswith((".xml", ".rels", ".vml")):
                try:
                    with zf.open(info) as member:
                        prolog = member.read(2048)
                except (zipfile.BadZipFile, NotImplementedError, OSError, ValueError, EOFError) as exc:
                    raise UnreadableSheet(
                        f"the {kind} part {info.filename!r} is damaged or uses an unsupported compression"
                    ) from exc
                if b"<!DOCTYPE" in prolog or b"<!ENTITY" in prolog:
                    raise UnreadableSheet(MSG_DTD.format(kind=kind, name=info.filename))
    return names


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
    "409": "USD",
    "1009": "CAD",
    "c09": "AUD",
    "1409": "NZD",
    "80a": "MXN",
    "2c0a": "ARS",
    "340a": "CLP",
    "240a": "COP",
    "3409": "USD",
    "4809": "SGD",
    "3c09": "HKD",
    "410": "USD",
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
        code = _DOLLAR_LCID.get((lcid or "").lower()) if symbol == "$" else detect_currency(symbol)
        if code:
            found.add(code)
    rest = _FMT_BRACKET.sub("", fmt)
    for literal in _FMT_QUOTED.findall(rest):
        code = detect_currency(literal)
        if code:
            found.add(code)
    # `\€` shows a euro; `_€` only leaves the width of one blank and `*€`
    # fills the cell with it (accounting formats pad with the symbol of the
    # locale that made them): neither states a currency.
    bare = _FMT_ESCAPE_OR_PAD.sub(lambda m: m.group(1) or " ", _FMT_QUOTED.sub("", rest))
    code = detect_currency(re.sub(r"[#0?.,;_*@%()\-+ ]", " ", bare))
    if code:
        found.add(code)
    result = found.pop() if len(found) == 1 else None
    _format_cache[fmt] = result
    return result


_FMT_ESCAPE_OR_PAD = re.compile(r"\\(.)|[_*].")
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


def error_text(exc: Exception) -> str:
    """An exception's first line without its type (a reason reads as words),
    never a path; the type's name when it says nothing else."""
    text = plain_error(exc)
    name = type(exc).__name__
    return text[len(name) + 2 :] if text.startswith(name + ": ") else "damaged data"


def plain_error(exc: Exception) -> str:
    """An exception as a short reason: its type and first line, never a path
    (the bytes are read from memory, so none should appear anyway)."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    text = re.sub(r"(?<![\w.])/(?:[^\s/'\"]+/)+[^\s'\"]*", "<path>", text)[:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def sheet_from_cells(
    title: str, cell_rows, styles: tuple[list, list], limits: ReadLimits, held: list[int]
) -> Sheet:
    """A sheet from its rows of cells, as a workbook reader yields them:
    ``(1-based row, [(0-based column, value, style id, computed by a formula)])``.
    ``styles``: per style id, the currency and the decimals its number format
    shows; ``held`` counts the rows held over the whole workbook."""
    rows: list[list[str]] = []
    raw: dict[str, dict] = {}
    runs: dict[int, list[list]] = {}
    last_valued: dict[int, int] = {}
    for idx, cells in cell_rows:
        row = _row_texts(cells, idx, title, styles, runs, last_valued, limits, raw)
        if not row:
            continue
        if idx > limits.max_rows:
            raise UnreadableSheet(MSG_TOO_MANY_ROWS.format(sheet=title, limit=limits.max_rows))
        if idx > len(rows):
            # Rows are held up to the last valued one: bound them over the
            # workbook before the gap is filled.
            held[0] += idx - len(rows)
            if held[0] > limits.max_workbook_rows:
                raise UnreadableSheet(
                    MSG_WORKBOOK_ROWS.format(limit=limits.max_workbook_rows, sheet=title, row=idx)
                )
            rows.extend([] for _ in range(idx - 1 - len(rows)))
            rows.append(row)
        else:  # a repeated <row r=..>: later wins
            rows[idx - 1] = row
    return Sheet(
        name=title, rows=rows, currency_formats={c: [tuple(r) for r in rs] for c, rs in runs.items()}, raw=raw
    )


def _row_texts(
    cells,
    idx: int,
    title: str,
    styles: tuple[list, list],
    runs: dict[int, list[list]],
    last_valued: dict[int, int],
    limits: ReadLimits,
    raw: dict[str, dict],
) -> list[str]:
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
            text = text[: limits.max_cell_chars]  # stripped already; a cut text keeps its full length
        if not text:
            continue
        if col >= limits.max_columns:
            raise UnreadableSheet(
                MSG_TOO_MANY_COLUMNS.format(sheet=title, row=idx, col=col + 1, limit=limits.max_columns)
            )
        if col >= len(row):
            row.extend([""] * (col - len(row)))
            row.append(text)
        else:
            row[col] = text
    return row


def _extend_run(
    runs: dict[int, list[list]], last_valued: dict[int, int], col: int, idx: int, code: str
) -> None:
    col_runs = runs.setdefault(col, [])
    last = col_runs[-1] if col_runs else None
    # Extend the run only over rows whose cell in this column had no value:
    # a valued cell without the currency format must not inherit it.
    if last is not None and last[2] == code and last[1] == last_valued.get(col):
        last[1] = idx
    else:
        col_runs.append([idx, idx, code])


def fill_merged(sheet: Sheet, merges, limits: ReadLimits) -> Sheet:
    """Repeat a merged range's value down its first column, as a reader of the
    sheet sees it: a name merged over the rows of its variants names each of
    them. ``merges`` holds ``(first_row, last_row, first_col, last_col)``,
    0-based and inclusive. Nothing is repeated across: a title or a section
    merged over the row stays one cell (a copy in every column would read as
    a row of values); a range across columns in the first SPAN_ROWS rows is
    kept in ``spans`` for the header reading (a group word over its
    sub-columns). Only ranges whose first cell holds a value fill or are
    kept; rows beyond the sheet's last valued row are not added."""
    rows, filled, spans = sheet.rows, 0, {}
    for r0, r1, c0, c1 in merges:
        if r0 >= len(rows) or c0 >= len(rows[r0]) or not rows[r0][c0]:
            continue
        if c1 > c0 and r0 < SPAN_ROWS and len(spans) < MAX_SPANS:
            spans[(r0 + 1, c0)] = c1
        if r1 <= r0:
            continue
        r1 = min(r1, len(rows) - 1)
        filled += r1 - r0
        if filled > limits.max_merged_cells:
            raise UnreadableSheet(MSG_MERGED_CELLS.format(sheet=sheet.name, limit=limits.max_merged_cells))
        value = rows[r0][c0]
        for r in range(r0 + 1, r1 + 1):
            row = rows[r]
            if len(row) <= c0:
                row.extend([""] * (c0 + 1 - len(row)))
            if not row[c0]:
                row[c0] = value
    return dataclasses.replace(sheet, spans=spans) if spans else sheet
