"""Price matrices: row labels by column labels, one price per body cell (pure).

A product by width and height, a perfume by bottle size, a service by zone:
the rows name the product (and any attributes, or one dimension), one or
two header rows name the other dimension, and every priced cell of the body
is one item. Its description is built from the product and the two labels
("Roller blind, 60 × 140 cm") and it cites its cell
(``source: {sheet, row, column}``). Empty cells, dashes and zeros (not
offered) and cells that hold text instead of a price ("on request") are
skipped and counted.

The matrix form of a mapping, per sheet, instead of ``columns``::

    {"row_labels": ["A"], "column_header_rows": [3], "body": "B4:Z40",
     "dimension_unit": "cm", "product": "Roller blind"}

``row_labels``: the columns that hold the product and its attributes (or the
row dimension); ``column_header_rows``: the rows, above the body, whose cells
name each body column; ``body``: the priced cells, a range whose end row may
be left out ("B4:Z": to the sheet's last row); ``dimension_unit``: written
after numeric labels; ``product``: a name put before every description, for
a matrix whose rows are only a dimension. Rate cards (weight bands by zone)
are recognized too but never proposed as items: they are refused unless a
reviewer maps them in this form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from itertools import pairwise
from typing import TYPE_CHECKING

import catalog.extraction.headers as headers
import catalog.extraction.layout as layout
from catalog.extraction.money import (
    PLAIN_NUMBER_RE,
    canonical_decimal,
    decimal_style,
    detect_currency,
    find_currencies,
    parse_decimal,
)
from catalog.extraction.text import cap, cell, col_index, col_letter, fold

if TYPE_CHECKING:  # the reader imports this package; only types flow back
    from catalog.reading import Sheet

MATRIX_KEYS = ("row_labels", "column_header_rows", "body", "dimension_unit", "product")

MSG_NOT_OBJECT = (
    "Sheet {name!r}: `matrix` must be an object with `row_labels`, `column_header_rows` "
    "and `body` (and optionally `dimension_unit`, `product`)."
)
MSG_UNKNOWN_KEY = "Sheet {name!r}: unknown matrix field {key!r}; the fields are {keys}."
MSG_ROW_LABELS = (
    'Sheet {name!r}: `row_labels` must list the column letters that hold the product (for example ["A"]).'
)
MSG_LABEL_COLUMN = (
    "Sheet {name!r}: row label column {value!r} does not exist (the sheet's last column is {last})."
)
MSG_HEADER_ROWS = (
    "Sheet {name!r}: `column_header_rows` must list the rows (1 to {rows}) whose cells name "
    "the body's columns (for example [3])."
)
MSG_BODY = (
    'Sheet {name!r}: `body` {value!r} is not a range such as "B4:Z40" (or "B4:Z", to the '
    "sheet's last row), top left to bottom right."
)
MSG_BODY_OUTSIDE = (
    "Sheet {name!r}: the body {value} reaches outside the sheet (it has {rows} rows, "
    "its last column is {last})."
)
MSG_HEADER_IN_BODY = (
    "Sheet {name!r}: column header row {row} is inside the body {body}; the header rows are above it."
)
MSG_HEADER_BELOW = "Sheet {name!r}: column header row {row} is below the body's first row ({top}); the header rows are above it."
MSG_LABEL_IN_BODY = (
    "Sheet {name!r}: row label column {letter} is inside the body {body}; the row labels are beside it."
)
MSG_UNIT = 'Sheet {name!r}: `dimension_unit` must be a short text ("cm", "ml") or null.'
MSG_PRODUCT = "Sheet {name!r}: `product` must be a text of at most {limit} characters, or null."
MSG_NO_PRICE = "Sheet {name!r}: the body {body} holds no price under a column label."

MAX_UNIT_CHARS = 20
MAX_PRODUCT_CHARS = 200
_SCAN_ROWS = 30  # rows looked at for the column labels
_SAMPLE_ROWS = 60  # body rows looked at to decide which columns hold prices
# As many items as the longest item list a sheet may hold (ReadLimits.max_rows).
MAX_MATRIX_ITEMS = 150_000
_NOT_OFFERED = {"-", "–", "—", "x", "/", "n/a", "na", "0", "—/—"}
_RANGE = re.compile(r"([A-Z]{1,3})([1-9]\d{0,6}):([A-Z]{1,3})([1-9]\d{0,6})?")
_WEIGHT = re.compile(r"\d\s*+(?:kg|lbs?|кг|t)\.?(?![\w])")
_BARE_NUMBER = re.compile(r"\d++(?:[.,]\d++)?")
_WHOLE = re.compile(r"^(\d++)[.,]0++$")  # "30.00" is written "30" in a description
# A size, a volume, a count: "50 ml", "1.5 l", "120x200", "6 pcs", "60".
_SIZE = re.compile(r"\d++(?:[.,]\d++)?+\s*+(?:[x×*]\s*+\d++(?:[.,]\d++)?+\s*+)?+[^\W\d_]{0,6}+\.?+")


@dataclass(frozen=True)
class Matrix:
    """Where a sheet's matrix is: columns 0-based, rows 1-based; ``bottom``
    None reads to the sheet's last row."""

    row_labels: tuple[int, ...]
    header_rows: tuple[int, ...]
    top: int
    left: int
    right: int
    bottom: int | None = None
    unit: str | None = None
    product: str | None = None

    @property
    def body(self) -> str:
        end = "" if self.bottom is None else str(self.bottom)
        return f"{col_letter(self.left)}{self.top}:{col_letter(self.right)}{end}"

    def to_json(self) -> dict:
        return {
            "row_labels": [col_letter(c) for c in self.row_labels],
            "column_header_rows": list(self.header_rows),
            "body": self.body,
            "dimension_unit": self.unit,
            "product": self.product,
        }

    @classmethod
    def from_json(cls, data: dict) -> Matrix:
        """A matrix form already checked by ``matrix_parse``."""
        left, top, right, bottom = _range(data["body"])
        return cls(
            row_labels=tuple(col_index(c) for c in data["row_labels"]),
            header_rows=tuple(data["column_header_rows"]),
            top=top,
            left=left,
            right=right,
            bottom=bottom,
            unit=data.get("dimension_unit") or None,
            product=data.get("product") or None,
        )


@dataclass(frozen=True)
class Proposal:
    """A matrix the extractor saw: ``kind`` is "matrix" (proposed as items),
    "rate_card" or "series" (prices over time; both refused unless a
    reviewer maps them)."""

    matrix: Matrix
    kind: str
    cells: int


@dataclass
class MatrixRead:
    items: list[dict]
    counts: dict[str, int]
    currency: str | None = None
    basis: str = ""
    doubts: list[str] = field(default_factory=list)
    too_large: bool = False  # more than MAX_MATRIX_ITEMS priced cells: reading stopped


def _range(text: str) -> tuple[int, int, int, int | None]:
    m = _RANGE.fullmatch(text)
    left, right = col_index(m.group(1)), col_index(m.group(3))
    return left, int(m.group(2)), right, int(m.group(4)) if m.group(4) else None


def last_row(rows: list[list[str]]) -> int:
    """The last row (1-based) that holds anything; 0 for an empty sheet."""
    for n in range(len(rows), 0, -1):
        if any(rows[n - 1]):
            return n
    return 0


# ------------------------------------------------------------------ checking


def _letters(value, name: str, width: int, errors: list[str]) -> list[int]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        errors.append(MSG_ROW_LABELS.format(name=name))
        return []
    out = []
    for letters in value:
        col = col_index(letters)
        if col is None or col >= width:
            errors.append(
                MSG_LABEL_COLUMN.format(
                    name=name, value=letters, last=col_letter(width - 1) if width else "none"
                )
            )
        elif col not in out:
            out.append(col)
    return out


def _header_rows(value, name: str, count: int, errors: list[str]) -> list[int]:
    ok = (
        isinstance(value, list)
        and value
        and all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= count for v in value)
    )
    if not ok:
        errors.append(MSG_HEADER_ROWS.format(name=name, rows=count))
        return []
    return sorted(set(value))


def _text(value, limit: int) -> tuple[bool, str | None]:
    if value is None or value == "":
        return True, None
    if not isinstance(value, str) or len(value.strip()) > limit:
        return False, None
    return True, " ".join(value.split()) or None


def _body(value, name: str, rows: list[list[str]], width: int, errors: list[str]):
    text = value.strip().upper().replace("$", "") if isinstance(value, str) else None
    if not text or not _RANGE.fullmatch(text):
        errors.append(MSG_BODY.format(name=name, value=value))
        return None
    left, top, right, bottom = _range(text)
    if left > right or (bottom is not None and bottom < top):
        errors.append(MSG_BODY.format(name=name, value=value))
        return None
    if right >= width or top > len(rows) or (bottom or 0) > len(rows):
        errors.append(
            MSG_BODY_OUTSIDE.format(
                name=name, value=text, rows=len(rows), last=col_letter(width - 1) if width else "none"
            )
        )
        return None
    return left, top, right, bottom


def _placement_errors(m: Matrix, name: str) -> list[str]:
    errors = []
    bottom = m.bottom if m.bottom is not None else float("inf")
    for row in m.header_rows:
        if m.top <= row <= bottom:
            errors.append(MSG_HEADER_IN_BODY.format(name=name, row=row, body=m.body))
        elif row > bottom:
            errors.append(MSG_HEADER_BELOW.format(name=name, row=row, top=m.top))
    for col in m.row_labels:
        if m.left <= col <= m.right:
            errors.append(MSG_LABEL_IN_BODY.format(name=name, letter=col_letter(col), body=m.body))
    return errors


def matrix_parse(data, sheet: Sheet) -> tuple[dict | None, list[str]]:
    """(the matrix form normalised, []) or (None, every problem in words).

    Normalised: letters upper case, header rows sorted, and a body that
    reaches the sheet's last row left open ("B4:Z"), so the same supplier's
    next sheet, longer or shorter, is read to its end."""
    name, rows = sheet.name, sheet.rows
    if not isinstance(data, dict):
        return None, [MSG_NOT_OBJECT.format(name=name)]
    errors = [
        MSG_UNKNOWN_KEY.format(name=name, key=k, keys=", ".join(MATRIX_KEYS))
        for k in data
        if k not in MATRIX_KEYS
    ]
    width = max((len(r) for r in rows), default=0)
    labels = _letters(data.get("row_labels"), name, width, errors)
    headers = _header_rows(data.get("column_header_rows"), name, len(rows), errors)
    body = _body(data.get("body"), name, rows, width, errors)
    unit_ok, unit = _text(data.get("dimension_unit"), MAX_UNIT_CHARS)
    if not unit_ok:
        errors.append(MSG_UNIT.format(name=name))
    product_ok, product = _text(data.get("product"), MAX_PRODUCT_CHARS)
    if not product_ok:
        errors.append(MSG_PRODUCT.format(name=name, limit=MAX_PRODUCT_CHARS))
    if errors or body is None:
        return None, errors
    left, top, right, bottom = body
    m = Matrix(tuple(labels), tuple(headers), top, left, right, bottom, unit, product)
    errors = _placement_errors(m, name)
    if not errors and not _holds_a_price(sheet, m):
        errors.append(MSG_NO_PRICE.format(name=name, body=m.body))
    if errors:
        return None, errors
    if bottom is not None and bottom >= last_row(rows):
        m = Matrix(m.row_labels, m.header_rows, top, left, right, None, unit, product)
    return m.to_json(), []


# ------------------------------------------------------------------ reading


def _price(text: str, decimal: str | None):
    """The cell's price, "empty" (nothing, a dash, a zero: not offered) or "text" (no price)."""
    text = text.strip()
    if not text:
        return "empty"
    value = parse_decimal(text, decimal)
    if value is None:
        return "empty" if fold(text) in _NOT_OFFERED else "text"
    return value if value > 0 else "empty"


@lru_cache(maxsize=4096)
def _label_form(text: str) -> tuple[str, bool]:
    """(the label as a description writes it, whether it is a bare number);
    labels repeat along their row or column, so each is looked at once."""
    text = _WHOLE.sub(r"\1", text)
    return text, bool(_BARE_NUMBER.fullmatch(text))


def _label(text: str, unit: str | None) -> str:
    return f"{text} {unit}" if unit and _label_form(text)[1] else text


def describe(product: str | None, row_labels: list[str], column_label: str, unit: str | None) -> str:
    """ "Roller blind, 60 × 140 cm": the product, the row's labels, the column's label.

    When the row's last label and the column's label are both bare numbers
    (a width by a height), they are written as one size, column first."""
    labels = [_label_form(t)[0] for t in row_labels if t]
    column_label, column_bare = _label_form(column_label)
    if labels and column_bare and _label_form(labels[-1])[1]:
        last = labels[-1]
        size = f"{column_label} × {last}" + (f" {unit}" if unit else "")
        parts = labels[:-1] + [size]
    else:
        parts = [_label(t, unit) for t in labels] + [_label(column_label, unit)]
    return ", ".join(p for p in [product or "", *parts] if p)


def column_labels(rows: list[list[str]], m: Matrix) -> dict[int, str]:
    """Each body column's label: its cells in the header rows, joined."""
    out = {}
    for col in range(m.left, m.right + 1):
        texts = [cap(cell(rows[r - 1], col)).strip() for r in m.header_rows if r <= len(rows)]
        out[col] = " ".join(dict.fromkeys(t for t in texts if t))
    return out


def _sheet_currency(rows: list[list[str]], m: Matrix) -> tuple[str | None, str, list[str]]:
    """The currency stated above the body (titles and header rows) and beside it."""
    above = {code for row in rows[: m.top - 1] for t in row if t for code in find_currencies(cap(t))}
    if len(above) == 1:
        return next(iter(above)), f"the rows above the body (1-{m.top - 1})", []
    if len(above) > 1:
        return None, "", [f"the rows above the body name several currencies ({', '.join(sorted(above))})"]
    return None, "", []


class _CellReader:
    def __init__(self, sheet: Sheet, m: Matrix, currency: str | None):
        self.sheet, self.m = sheet, m
        rows = sheet.rows
        self.bottom = min(m.bottom or len(rows), len(rows))
        self.labels = column_labels(rows, m)
        self.decimal = decimal_style(
            cell(rows[r - 1], c)
            for r in range(m.top, min(self.bottom, m.top + 500) + 1)
            for c in range(m.left, m.right + 1)
        )
        self.code, self.basis, self.doubts = _sheet_currency(rows, m)
        if currency:
            self.code, self.basis = currency, "the reviewer's mapping"

    def currency(self, r: int, col: int, text: str) -> str | None:
        code = None if PLAIN_NUMBER_RE.fullmatch(text) else detect_currency(text)
        if code is None and self.sheet.currency_formats:
            code = self.sheet.format_currency(r, col)
        return code or self.code

    def source(self, r: int, col: int, value) -> dict:
        source = {"sheet": self.sheet.name, "row": r, "column": col_letter(col)}
        written = max(0, -value.as_tuple().exponent)
        if written and written > max(0, -value.normalize().as_tuple().exponent):
            source["price_places"] = min(written, 6)
        raw = self.sheet.raw_value(r, col) if self.sheet.raw else None
        if raw:
            source["raw_price"] = raw["value"]
            if raw.get("formula"):
                source["formula"] = True
        return source

    def item(self, r: int, col: int, text: str, value, row_labels: list[str]) -> dict:
        return {
            "sku": "",
            "description": describe(self.m.product, row_labels, self.labels[col], self.m.unit),
            "unit": None,
            "pack_size": None,
            "unit_price": canonical_decimal(value),
            "currency": self.currency(r, col, text),
            "source": self.source(r, col, value),
        }


def matrix_read(sheet: Sheet, m: Matrix, currency: str | None = None) -> MatrixRead:
    """One item per priced cell of the body under a column label, in a row
    with a label; everything else counted: ``priced``, ``empty`` (blank, a
    dash, a zero), ``no_price`` (text such as "on request") and
    ``unlabeled`` (prices in a row or column without a label)."""
    reader = _CellReader(sheet, m, currency)
    items: list[dict] = []
    counts = {"priced": 0, "empty": 0, "no_price": 0, "unlabeled": 0}
    for r in range(m.top, reader.bottom + 1):
        row = sheet.rows[r - 1]
        row_labels = [cap(cell(row, c)).strip() for c in m.row_labels]
        labeled = any(row_labels)
        for col in range(m.left, m.right + 1):
            text = cap(cell(row, col))
            got = _price(text, reader.decimal)
            if got == "empty":
                counts["empty"] += labeled and bool(reader.labels[col])
                continue
            if not labeled or not reader.labels[col]:
                counts["unlabeled"] += got != "text"
                continue
            if got == "text":
                counts["no_price"] += 1
                continue
            counts["priced"] += 1
            items.append(reader.item(r, col, text, got, row_labels))
        if len(items) > MAX_MATRIX_ITEMS:
            return MatrixRead([], counts, too_large=True)
    return MatrixRead(items, counts, reader.code, reader.basis, reader.doubts)


def _holds_a_price(sheet: Sheet, m: Matrix) -> bool:
    """Whether the body has one priced cell under a column label in a labeled
    row (stops at the first: a mapping is checked in the web request)."""
    labels = column_labels(sheet.rows, m)
    for r in range(m.top, min(m.bottom or len(sheet.rows), len(sheet.rows)) + 1):
        row = sheet.rows[r - 1]
        if not any(cell(row, c).strip() for c in m.row_labels):
            continue
        if any(
            labels[c] and isinstance(_price(cap(cell(row, c)), None), Decimal)
            for c in range(m.left, m.right + 1)
        ):
            return True
    return False


def counts_sentence(counts: dict[str, int]) -> str:
    """The reviewer's summary of a matrix's cells."""
    parts = [f"{counts['priced']} priced cell{'s' if counts['priced'] != 1 else ''} became items"]
    if counts["empty"]:
        parts.append(f"{counts['empty']} empty or not offered skipped")
    if counts["no_price"]:
        parts.append(f'{counts["no_price"]} without a price (such as "on request") skipped')
    if counts["unlabeled"]:
        parts.append(f"{counts['unlabeled']} prices outside a labeled row or column skipped")
    return "; ".join(parts)


# ------------------------------------------------------------------ recognizing


def _share(labels: list[str], test) -> float:
    return sum(1 for t in labels if test(t)) / len(labels) if labels else 0.0


def _size(text: str) -> bool:
    return layout.is_dimension(text) or bool(_SIZE.fullmatch(fold(text)))


def _weight(text: str) -> bool:
    return bool(_WEIGHT.search(fold(text)))


def _zone(text: str) -> bool:
    return bool(layout._ZONE.fullmatch(fold(text)))


def _kind(column_labels_: list[str], row_labels: list[str]) -> str:
    """ "series" for columns of running dates or periods (prices over time);
    "rate_card" for weight bands or zones by weights; else "matrix"."""
    if layout.keyed_by_periods(column_labels_):
        return "series"
    if _share(column_labels_, layout.is_band) >= 0.6 or _share(row_labels, layout.is_band) >= 0.6:
        return "rate_card"
    if _share(column_labels_, _zone) >= 0.6 and _share(row_labels, _weight) >= 0.6:
        return "rate_card"
    if _share(row_labels, _zone) >= 0.6 and _share(column_labels_, _weight) >= 0.6:
        return "rate_card"
    return "matrix"


class _Numbers:
    """Whether a cell holds a number, parsed once: the candidate header rows
    share the rows below them."""

    def __init__(self, rows: list[list[str]]):
        self.rows = rows
        self.seen: dict[tuple[int, int], bool] = {}

    def __call__(self, r: int, col: int) -> bool:
        key = (r, col)
        got = self.seen.get(key)
        if got is None:
            got = self.seen[key] = parse_decimal(cell(self.rows[r - 1], col).strip()) is not None
        return got


def _priced_columns(rows: list[list[str]], header: int, number: _Numbers) -> list[int]:
    """Columns (not the first) whose cells under ``header`` are mostly prices."""
    sample = [r for r in range(header + 1, min(len(rows), header + _SAMPLE_ROWS) + 1) if any(rows[r - 1])]
    width = max((len(rows[r - 1]) for r in sample), default=0)
    out = []
    for col in range(1, width):
        filled = [r for r in sample if cell(rows[r - 1], col).strip()]
        numbers = sum(1 for r in filled if number(r, col))
        if numbers >= 2 and numbers >= 0.6 * len(filled):
            out.append(col)
    return out


def _body_run(priced: list[int], header_row: list[str]) -> list[int]:
    """The first run of labeled price columns; empty spacer columns may sit between."""
    run: list[int] = []
    for col in priced:
        if not cell(header_row, col).strip():
            continue
        if run and col - run[-1] > 2:
            break
        run.append(col)
    return run


def _monotonic(numbers: list) -> bool:
    pairs = list(pairwise(numbers))
    return all(a < b for a, b in pairs) or all(a > b for a, b in pairs)


def _labels_fit(labels: list[str], strict: bool) -> bool:
    """Column labels of a matrix: distinct, short, naming no item role (a
    "Price" or "SKU" header is an item list's); when ``strict``, each one a
    dimension or a zone ("60", "50 ml", "Zone 2")."""
    if len(set(labels)) != len(labels) or any(len(t) > 40 or "%" in t for t in labels):
        return False  # a percentage is a discount or a tax, not a dimension
    if any(headers.RE["statistic"].search(fold(t)) for t in labels):
        return False  # minimum, average, maximum: statistics, not offers
    numbers = [parse_decimal(t) for t in labels]
    if all(n is not None for n in numbers) and not _monotonic(numbers):
        return False  # a row of values, not a dimension's steps (60, 80, 100)
    for text in labels:
        got = headers.classify_header(text)
        if got and got[0] != "description" and not _size(text):
            return False
    if not strict:
        return True
    return all(_size(t) or _zone(t) for t in labels) and not all(_BARE_NUMBER.fullmatch(t) for t in labels)


def _priced_rows(body: list[int], start: int, stop: int, number: _Numbers) -> list[int]:
    return [r for r in range(start, min(stop, len(number.rows)) + 1) if any(number(r, c) for c in body)]


def _candidate(rows: list[list[str]], header: int, strict: bool, number: _Numbers) -> Proposal | None:
    """The matrix under ``header``, judged on the first rows below it."""
    header_row = rows[header - 1]
    body = _body_run(_priced_columns(rows, header, number), header_row)
    if len(body) < 3:
        return None
    labels = [cap(cell(header_row, c)).strip() for c in body]
    if not _labels_fit(labels, strict):
        return None
    priced = _priced_rows(body, header + 1, header + _SAMPLE_ROWS, number)
    label_cols = [
        c
        for c in range(body[0])
        if sum(1 for r in priced if cell(rows[r - 1], c).strip()) >= 0.6 * len(priced)
    ]
    if len(priced) < 2 or not label_cols:
        return None
    row_texts = [cell(rows[r - 1], label_cols[-1]).strip() for r in priced]
    if strict and sum(1 for t in row_texts if parse_decimal(t) is None) < 0.6 * len(row_texts):
        return None  # an item list's own numbers (a code, a size) beside its prices
    m = Matrix(tuple(label_cols), (header,), header + 1, body[0], body[-1], priced[-1])
    cells = sum(1 for r in priced for c in body if number(r, c))
    return Proposal(m, _kind(labels, row_texts), cells)


def _last_priced_row(rows: list[list[str]], m: Matrix) -> int:
    """The body's last row over the whole sheet (the candidates looked at a sample)."""
    for r in range(len(rows), m.top - 1, -1):
        if any(parse_decimal(cell(rows[r - 1], c).strip()) is not None for c in range(m.left, m.right + 1)):
            return r
    return m.top


def propose_matrix(rows: list[list[str]], *, header: tuple[int, ...] | None = None) -> Proposal | None:
    """The matrix a sheet's shape shows, or None.

    ``header`` None: the sheet was judged no item list by its shape, so any
    of its first rows may hold the column labels. Otherwise (the rows of the
    header an item-list reading found; none, no matrix), the sheet reads as an item
    list too, so the evidence must be strong: the column labels under that
    header are dimensions or zones (sizes, volumes, zones), not all bare
    numbers, and the rows are named by text, so that an item list's price
    columns ("Price", "Retail") and its numeric codes never make a matrix."""
    strict = header is not None
    if strict and not header:
        return None
    best: Proposal | None = None
    number = _Numbers(rows)
    candidates = [header[-1]] if strict else range(1, min(len(rows), _SCAN_ROWS) + 1)
    for row in candidates:
        cells = [c for c in rows[row - 1] if c]
        if len(cells) < 3 or (cell(rows[row - 1], 0) and all(parse_decimal(c) is not None for c in cells)):
            continue  # numbers from the first cell on: a data row, not column labels under a corner
        got = _candidate(rows, row, strict, number)
        if got and (best is None or got.cells > best.cells):
            best = got
    if best is None:
        return None
    m = best.matrix
    last = _last_priced_row(rows, m)
    return Proposal(Matrix(m.row_labels, m.header_rows, m.top, m.left, m.right, last), best.kind, best.cells)
