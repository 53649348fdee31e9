"""Where a sheet's table is: its header row(s), and whether it is an item list.

The header row is the row whose labels name the most roles (one or two
lines); failing that, the text row right above the first run of data rows;
failing that, none (the mapping then needs a reviewer's confirmation).
A sheet is "clearly not an item list" only when its shape says so: numeric
columns headed by zones or bands (a rate card), numeric columns headed by
dimensions beside rows headed by dimensions (a matrix), or columns of
statistics with no unit price.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise

from catalog.extraction.column_model import SAMPLE_ROWS, is_running_index, row_number
from catalog.extraction.headers import HEADER_CELL_MAX, RE, classify_header
from catalog.extraction.money import parse_decimal
from catalog.extraction.text import cap, fold, is_period

HEADER_SCAN_ROWS = 50
_DATA_RUN = 8  # rows looked at to decide that data starts here
_SHAPE_ROWS = 200  # the body rows a table's shape (its numeric columns, its row labels) is read from

_DIMENSION = re.compile(
    r"(?:(?:do|up to|bis|до|az|<|≤|>|≥|od|from|over|nad|above|ab|von|from)\s*+)?+"
    r"\d[\d.,]*+\s*+(?:(?:-|–|—|to|do|az|bis|a|…|\.\.)\s*+\d[\d.,]*+\s*+)?+"
    r"(?:[x×х*]\s*+\d++(?:[.,]\d++)?+\s*+)?+(?:kg|g|t|cm|mm|m|km|l|ml|lb|lbs|oz|кг|см|мм|м)?+\.?+"
)
_ZONE = re.compile(
    r"(?:zone|zona|zóna|zona|strefa|pasmo|pásmo|band|region|región|zon|зона|tier|tarif|pasmo)"
    r"(?![a-z])\s*+[\w.\-]{0,6}+"
)
_RATE_WORDS = re.compile(
    r"(?<![\w])(?:zone|zona|strefa|pasmo|band|weight|gewicht|vaha|waga|вес|kg|кг)(?![\w])"
)


@dataclass(frozen=True)
class Header:
    rows: tuple[int, ...]  # 1-based header rows; () when the sheet has none
    labels: list[str]

    @property
    def body_start(self) -> int:
        return self.rows[-1] + 1 if self.rows else 1


_BAND = re.compile(
    r"(?:(?:do|up to|bis|до|az|<|≤|>|≥|od|from|over|nad|above|ab|von)\s*+\d|(?<![\d.,])\d[\d.,]*+\s*+"
    r"(?:-|–|—|to|do|az|bis|…|\.\.)\s*+\d)"
)


def is_band(text: str) -> bool:
    """A weight or size band ("0 až 3.00", "do 5 kg", "10-20 kg"): a rate, not an item."""
    return is_dimension(text) and bool(_BAND.search(fold(text)))


def is_dimension(text: str) -> bool:
    """A label that is a size, a weight band or a bare number ("0-1 kg", "120x200", "50")."""
    if not text or len(text) > 30:
        return False
    f = fold(text)
    return bool(_DIMENSION.fullmatch(f) or _ZONE.fullmatch(f))


def _is_number(text: str) -> bool:
    return parse_decimal(text) is not None


def _is_text_row(row: list[str]) -> bool:
    """At least two labels, mostly not numbers: how a header row looks."""
    cells = [c for c in row if c]
    if len(cells) < 2 or any(len(c) > HEADER_CELL_MAX for c in cells):
        return False
    return sum(1 for c in cells if _is_number(c)) <= 0.3 * len(cells)


def _is_data_row(row: list[str]) -> bool:
    cells = [c for c in row if c]
    return len(cells) >= 2 and any(_is_number(c) for c in cells) and any(not _is_number(c) for c in cells)


def table_start(rows: list[list[str]]) -> int:
    """How many rows at the top of a sheet without a header stand above its table: rows that
    fill one cell at most (a title, a supplier's letterhead, a date) over the first row that
    fills two. An item fills two cells at least (a name and a price), so none is lost; the
    rows are kept out of the columns' values, whose shares they would skew. 0 when none of the
    first ``SAMPLE_ROWS`` rows fills two (a list of one column stays whole)."""
    for n, row in enumerate(rows[:SAMPLE_ROWS]):
        if sum(1 for text in row if text.strip()) >= 2:
            return n
    return 0


def _label_score(labels: list[str]) -> tuple[int, int]:
    """(roles the labels name, a price counted twice; the strength of the best label per role)."""
    best: dict[str, int] = {}
    for got in map(classify_header, labels):
        if got:
            best[got[0]] = max(best.get(got[0], 0), got[1])
    return len(best) + ("unit_price" in best), sum(best.values())


def header_labels(
    rows: list[list[str]], header_rows: list[int] | tuple[int, ...], spans: dict | None = None
) -> list[str]:
    """The words over each column of a header of ``header_rows`` (1-based): the
    rows' cells joined top to bottom, a cell that repeats the one above once
    (``_merged_once``). A cell merged across columns (``spans``:
    (row, first column) -> last column, Sheet.spans) above a lower header row
    is a group word ("price" over "retail" and "wholesale") when the next row
    is the header's too: it stands over each column of its range that has
    words of its own in that row. In the header's last row, the one over the
    values, a merged cell's word stands over each column of its range that
    has no word of its own ("Name" merged over A:C, the names in B). A range
    alone in its row is the table's title, not a group."""
    lines = [list(rows[h - 1]) if 0 < h <= len(rows) else [] for h in header_rows]
    if lines:
        _fill_across(lines[-1], header_rows[-1], spans)
    for n, (h, nxt) in enumerate(pairwise(header_rows)):
        if nxt == h + 1:
            _fill_across(lines[n], h, spans, below=lines[n + 1])
    width = max([len(line) for line in lines] + [0])
    return [" ".join(_merged_once(cell_at(line, i) for line in lines)) for i in range(width)]


def _merged_once(cells) -> list[str]:
    """A column's header cells top to bottom, empty ones and a repeat of the one above left
    out: a cell merged over several header rows is written into each of them, and is one word."""
    out: list[str] = []
    for text in cells:
        if text and (not out or out[-1] != text):
            out.append(text)
    return out


def _fill_across(line: list[str], h: int, spans: dict | None, below: list[str] | None = None) -> None:
    """``line`` (header row ``h``) with each merged cell's word over the columns of its range
    that have no word of their own: those with words in the header row ``below`` (a group), or
    without it every one within the row. A range alone in its row (a title) stays as it is."""
    worded = [c for c, text in enumerate(line) if text]
    reach = len(line if below is None else below)
    for (r, first), last in (spans or {}).items():
        if r != h or not cell_at(line, first) or all(first <= c <= last for c in worded):
            continue
        for c in range(first + 1, min(last, reach - 1) + 1):
            if not cell_at(line, c) and (below is None or below[c]):
                line.extend([""] * (c + 1 - len(line)))
                line[c] = line[first]


def cell_at(row: list[str], i: int) -> str:
    return row[i] if i < len(row) else ""


def _price_under(labels: list[str], row: list[str]) -> bool:
    return any(
        (got := classify_header(label)) and got[0] == "unit_price" and _is_number(cell_at(row, i))
        for i, label in enumerate(labels)
    )


def _by_words(rows: list[list[str]], spans: dict | None) -> Header | None:
    best: tuple[tuple, Header] | None = None
    by_row: dict[int, dict] = {}  # each row's own ranges, so each candidate reads only those
    for (r, first), last in (spans or {}).items():
        by_row.setdefault(r, {})[(r, first)] = last
    for r in range(1, min(len(rows), HEADER_SCAN_ROWS) + 1):
        row = rows[r - 1]
        if not _is_text_row(row):
            continue
        score = _label_score(row)
        cand = ((*score, -r), Header((r,), header_labels(rows, (r,), by_row.get(r))))
        nxt = rows[r] if r < len(rows) else []
        if _is_text_row(nxt):
            labels = header_labels(rows, (r, r + 1), {**by_row.get(r, {}), **by_row.get(r + 1, {})})
            double = _label_score(labels)
            # The second line continues the header when it names more, or as
            # much under a group word, unless it holds a price under the price
            # label: then it is the first item.
            grouped = r in by_row and labels != header_labels(rows, (r, r + 1), by_row.get(r + 1))
            if (double > score or (grouped and double >= score)) and not _price_under(labels, nxt):
                cand = ((*double, -r), Header((r, r + 1), labels))
        if cand[0][0] >= 2 and (best is None or cand[0] > best[0]):
            best = cand
    return best[1] if best else None


def _data_start(rows: list[list[str]]) -> int | None:
    """The first row (1-based) that starts a run of mostly data rows. A row of labels that
    names a role ("Name" beside "3 %", "6 %" over discount tiers) is a header line, not data."""
    limit = min(len(rows), HEADER_SCAN_ROWS + _DATA_RUN)
    for r in range(1, limit + 1):
        row = rows[r - 1]
        if not _is_data_row(row) or (_is_text_row(row) and _label_score(row)[0]):
            continue
        run = [x for x in rows[r - 1 : r - 1 + _DATA_RUN * 2] if x][:_DATA_RUN]
        if sum(1 for x in run if _is_data_row(x)) >= 0.6 * len(run):
            return r
    return None


def _by_shape(rows: list[list[str]], spans: dict | None) -> Header | None:
    start = _data_start(rows)
    if start is None:
        return None
    for r in range(start - 1, max(0, start - 4), -1):
        row = rows[r - 1]
        if row:
            return Header((r,), header_labels(rows, (r,), spans)) if _is_text_row(row) else None
    return None


def find_header(rows: list[list[str]], spans: dict | None = None) -> Header:
    """The header of the sheet's table, or ``Header((), [])`` when it has none;
    ``spans`` are the sheet's cells merged across columns (``header_labels``)."""
    named = _by_words(rows, spans)
    if named and _is_footer(rows, named):
        named = None
    return _filled_down(rows, named, spans) if named else _by_shape(rows, spans) or Header((), [])


# A row repeating this many of the cells of the header row above it, in the same columns, is the
# header's too. Under the labeled header of 9 files of the corpus (7 of the development part) a
# row repeats two cells or more (a header cell merged over several rows, which the reader writes
# into each of them); none of those rows is an item. A row further down repeating the header so is
# the header again (``rows.repeats_header``).
REPEATED_CELLS = 2


def _filled_down(rows: list[list[str]], header: Header, spans: dict | None) -> Header:
    """The header with the rows right under it that repeat at least ``REPEATED_CELLS`` of the
    row above's cells in the same columns and hold no price under the price's label."""
    taken = list(header.rows)
    while taken[-1] < min(len(rows), HEADER_SCAN_ROWS):
        above, row = rows[taken[-1] - 1], rows[taken[-1]]
        repeated = sum(1 for a, b in zip(above, row, strict=False) if a and a == b)
        if repeated < REPEATED_CELLS or _price_under(header.labels, row):
            break
        taken.append(taken[-1] + 1)
    if len(taken) == len(header.rows):
        return header
    return Header(tuple(taken), header_labels(rows, tuple(taken), spans))


def _is_footer(rows: list[list[str]], header: Header) -> bool:
    """A row of header words with a run of data rows above it and none below is the table's
    footer (a total, a signature block under a sheet without a header), not its header."""
    if any(_is_data_row(r) for r in rows[header.rows[-1] :]):
        return False
    return sum(1 for r in rows[: header.rows[0] - 1] if _is_data_row(r)) >= _DATA_RUN


_DIGIT = re.compile(r"\d")


def header_offset(rows: list[list[str]], header: Header) -> int:
    """0, or the shift (+1 or -1) that stands the header's words over their values.

    A header whose words stand one column off the body (merged cells whose text lands in the
    next column, a header typed one cell over) names the wrong column for every role. It is
    read shifted only when it fits the body exactly that way and does not as it stands: the
    columns it names are the columns the body's rows fill, moved by one. A body row is a row
    of two cells or more, one with a digit at least (a section heading fills one cell, a
    header's second line holds words).

    Only the whole header: one merged cell standing over two columns is not moved (its word
    may name either, and the sheet's other words stand right). A header over an unnamed first
    column and a named column left empty (a running number, an order quantity to fill in)
    fits the same way: it is read shifted too, and its roles are all to confirm, as for any
    shifted header (a reviewer moves them back); reading a shifted header as it stands would
    put values under the wrong words with nothing to point at them."""
    if not header.rows:
        return 0
    filled = {
        c
        for row in rows[header.body_start - 1 :][:SAMPLE_ROWS]
        if sum(1 for text in row if text.strip()) >= 2 and any(_DIGIT.search(text) for text in row)
        for c, text in enumerate(row)
        if text.strip()
    }
    named = {c for c, text in enumerate(header.labels) if text.strip()}
    if not filled or named == filled:
        return 0
    return next((s for s in (1, -1) if named == {c + s for c in filled}), 0)


def realigned(header: Header, shift: int) -> Header:
    """``header`` with its words moved ``shift`` columns to the left (see ``header_offset``)."""
    labels = header.labels[shift:] if shift > 0 else [""] * -shift + header.labels
    return Header(header.rows, labels)


def header_at(rows: list[list[str]], row: int | None) -> Header:
    """The header a reviewer named (1-based row, or None for no header)."""
    if not row or row > len(rows):
        return Header((), [])
    return Header((row,), list(rows[row - 1]))


def _numeric_columns(body: list[list[str]], width: int) -> list[int]:
    sample = [r for r in body if r][:_SHAPE_ROWS]
    out = []
    for col in range(width):
        texts = [r[col] for r in sample if col < len(r) and r[col]]
        if len(texts) >= 2 and sum(1 for t in texts if _is_number(t)) >= 0.6 * len(texts):
            out.append(col)
    return out


_DIMENSION_SCAN = 20  # rows from the top where a matrix's column labels may sit


def _dimension_rows(rows: list[list[str]]) -> list[Header]:
    """Rows near the top with at least three dimension labels: a matrix's column headers."""
    out = []
    for r in range(1, min(len(rows), _DIMENSION_SCAN) + 1):
        cells = [c for c in rows[r - 1][1:] if c]
        dims = [c for c in cells if is_dimension(c)]
        if len(dims) >= 3 and len(dims) >= 0.8 * len(cells) and len(set(dims)) == len(dims):
            out.append(Header((r,), list(rows[r - 1])))
    return out[:3]


def _numbers_from_first_cell(row: list[str]) -> bool:
    cells = [c for c in row if c]
    return bool(cell_at(row, 0)) and all(_is_number(c) for c in cells)


def _row_label_column(body: list[list[str]], width: int, numeric: list[int]) -> int:
    """The column that names the rows: the first that is not numeric (a matrix's dimension
    down its side, or an item list's names beside its row numbers), or the first column when
    every column is numeric."""
    sample = [r for r in body[:_SHAPE_ROWS] if r]
    text = (c for c in range(width) if c not in numeric and sum(1 for r in sample if cell_at(r, c)) >= 2)
    return next(text, 0)


def _row_labels(body: list[list[str]], col: int) -> list[str]:
    return [cell_at(r, col) for r in body[:_SHAPE_ROWS] if r and cell_at(r, col)]


def _shape_kind(header: Header, body: list[list[str]]) -> str | None:
    width = max([len(header.labels)] + [len(r) for r in body[:_SHAPE_ROWS]])
    numeric = _numeric_columns(body, width)
    labels = [cap(cell_at(header.labels, c)) for c in numeric]
    dims = [t for t in labels if is_dimension(t)]
    if len(numeric) < 3 or len(dims) < 3 or len(dims) < 0.6 * len(numeric):
        return None
    if any(_ZONE.fullmatch(fold(t)) or _RATE_WORDS.search(fold(t)) for t in labels):
        return "rate card (prices by bands and zones)"
    side = _row_label_column(body, width, numeric)
    corner = cell_at(header.labels, side)
    if corner and is_dimension(corner):
        # A matrix's column labels stand beside an empty or a text corner (so do those of the
        # 11 development files labeled as matrices or rate cards, on every such row); a row
        # whose cell over the row labels is one of them (a size over sizes) is a row of the body.
        return None
    firsts = _row_labels(body, side)
    # Row labels that are one value on every row, or row numbers (every one
    # a row number, counting up), name no dimension: they are an item list's
    # constant or index column. Bands among numbers keep their rows labeled.
    if len(set(firsts)) < 2 or (all(row_number(t) is not None for t in firsts) and is_running_index(firsts)):
        return None
    if sum(1 for t in firsts if is_dimension(t) or _RATE_WORDS.search(fold(t))) >= 0.6 * len(firsts):
        return "price matrix (its rows and columns are both dimensions)"
    return None


def not_an_item_list(rows: list[list[str]], header: Header) -> str | None:
    """A rate card, a price matrix or a table of statistics when the shape says so, else None.

    A row of numbers from its first cell on (an item's length, depth, code)
    is a data row, never a matrix's column labels: those sit beside an empty
    or a text corner. Neither is a row below a header whose words name the
    columns: that header is the table's, and the rows under it are its body."""
    named = bool(header.rows) and _label_score(header.labels)[0] >= 2
    dims = [
        d
        for d in _dimension_rows(rows)
        if not _numbers_from_first_cell(d.labels) and not (named and d.rows[0] > header.rows[-1])
    ]
    for cand in [header] + dims:
        kind = _shape_kind(cand, rows[cand.body_start - 1 :])
        if kind:
            return kind
    if _periods_across(rows):  # no item list's row holds them, under a header or not
        return "table of prices over time (its columns are dates or periods, not items)"
    labels = [t for t in header.labels if t and len(t) <= HEADER_CELL_MAX]
    stats = [t for t in labels if RE["statistic"].search(fold(t))]
    priced = any((got := classify_header(t)) and got[0] == "unit_price" for t in labels)
    if len(stats) >= 2 and not priced:
        return "table of statistics (minimum, maximum, average), with no unit price"
    return None


_DIGITS = re.compile(r"\d+")
PERIOD_LEAST = 5  # dates or periods that make a series
PERIOD_SHARE = 0.8  # of a column's filled cells that are dates or periods
PERIOD_DISTINCT = 0.3  # of them distinct: a running series, not one "valid from" date
RUNNING_SHARE = 0.8  # of consecutive periods in order (a series may restart per group)


def _period_key(text: str) -> tuple[int, ...]:
    """A sortable key: the year first, whichever way the date is written."""
    parts = [int(d) for d in _DIGITS.findall(text)]
    if parts and parts[0] < 1000 and len(parts) >= 3:  # day.month.year
        parts = [parts[2], parts[1], parts[0], *parts[3:]]
    return tuple(parts)


def keyed_by_periods(texts: list[str]) -> bool:
    """A column of running dates or periods: its rows are observations over
    time (prices by day, by half-year), not items."""
    texts = [t for t in texts if t]
    if len(texts) < PERIOD_LEAST:
        return False
    periods = [t for t in texts if is_period(t)]
    if len(periods) < PERIOD_SHARE * len(texts) or len(set(periods)) < PERIOD_DISTINCT * len(periods):
        return False
    keys = [_period_key(t) for t in periods]
    ordered = sum(1 for a, b in pairwise(keys) if a <= b)
    descending = sum(1 for a, b in pairwise(keys) if a >= b)
    return max(ordered, descending) >= RUNNING_SHARE * (len(keys) - 1)


def _periods_across(rows: list[list[str]]) -> bool:
    """The first of the top rows that holds enough dates or periods labels the
    numeric columns below it with running ones (``keyed_by_periods`` read
    across): each column is an observation over time (a day's rate, a month's
    market price), so the rows are no items with one price each. One row is
    judged, so the body's columns are read once."""
    for r, row in enumerate(rows[:_DIMENSION_SCAN], start=1):
        if sum(1 for t in row if is_period(t)) >= PERIOD_LEAST:
            body = rows[r:]
            width = max([len(row)] + [len(b) for b in body[:_SHAPE_ROWS]])
            return keyed_by_periods([cell_at(row, c) for c in _numeric_columns(body, width)])
    return False


BOUNDS_SHARE = 0.9  # of rows whose two whole numbers run low to high
BOUNDS_CHAIN = 0.5  # of rows whose low bound continues the row above's band


_PROBE_ROWS = 20  # rows looked at first: a column with no number there is not parsed further


def _whole_numbers(sample: list[list[str]], col: int) -> list | None:
    """The column's values parsed (None where not a number), or None when its
    first rows hold too few whole numbers to bound bands."""
    probe = [parse_decimal(t) for r in sample[:_PROBE_ROWS] if (t := cell_at(r, col))]
    if sum(1 for v in probe if v is not None and v == v.to_integral_value()) < 5:
        return None
    return [parse_decimal(cell_at(r, col)) for r in sample]


def band_bounds(body: list[list[str]], width: int) -> int | None:
    """The first of two adjacent columns of whole numbers that bound a band
    on every row (0-18, 19-23, 24-28: an age or weight band kept in two
    columns), or None."""
    sample = [r for r in body[:500] if any(r)]
    parsed: dict[int, list | None] = {}
    for col in range(width - 1):
        for c in (col, col + 1):
            if c not in parsed:
                parsed[c] = _whole_numbers(sample, c)
        if parsed[col] is None or parsed[col + 1] is None:
            continue
        pairs = [
            (a, b)
            for a, b in zip(parsed[col], parsed[col + 1], strict=True)
            if a is not None and b is not None
        ]
        whole = [(a, b) for a, b in pairs if a == a.to_integral_value() and b == b.to_integral_value()]
        banded = sum(1 for a, b in whole if a < b)
        chained = sum(1 for (_a, high), (low, _b) in pairwise(whole) if low in (high, high + 1))
        if banded >= BOUNDS_SHARE * len(pairs) and chained >= BOUNDS_CHAIN * len(pairs):
            return col
    return None
