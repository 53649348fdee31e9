"""Row classes: every row of a sheet is accounted for, with a reason.

Classes: ``item``, ``header``, ``title``, ``section``, ``blank``, ``total``,
``note``, ``skipped``, ``PRICE_WITHOUT_ITEM`` (a row that holds a price
but no SKU or description: it becomes a flagged item, never dropped),
``TOTAL_WORD`` (a row named by a total word whose price is no sum: a
flagged item), an ``item`` flagged ``SUM_OF_PRICES`` (a named row whose
price is the sum of the prices above it, as a total line's is, in words no
vocabulary holds) and ``MOVED_HEADER`` (a header again, naming the price in
another column).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal

from catalog.extraction.headers import RE, classify_header
from catalog.extraction.layout import REPEATED_CELLS
from catalog.extraction.money import parse_decimal
from catalog.extraction.text import cap, cell, col_letter, fold
from catalog.flags import Code, flag

NOTE_CHARS = 60  # a lone text this long is a note, shorter a section heading


# The row class of a price with no item: its item carries the flag of that name.
PRICE_WITHOUT_ITEM = Code.PRICE_WITHOUT_ITEM.value
# The row class of a row that begins with a total word ("Total", "Итого") while its price is
# below a price above it since the last heading or total, or no price stands there: a sum is
# never below one of its parts and sums something, so it is an item named so ("Total care
# conditioner"), and carries the flag.
TOTAL_WORD = Code.TOTAL_WORD.value
# A header row below the first that names the price in another column: the items under it
# are read from the same columns as above, each price flagged.
MOVED_HEADER = "moved_header"


@dataclass(frozen=True)
class RowClass:
    row: int
    kind: str
    reason: str
    flag: dict | None = None  # a flag the row's item carries


@dataclass
class Columns:
    """The columns of one table, 0-based (None when the table has no such column)."""

    price: int
    sku: int | None = None
    desc: int | None = None
    unit: int | None = None
    pack: int | None = None
    currency: int | None = None
    labels: tuple[str, ...] = ()


def _total_word(text: str) -> str | None:
    """The total word a row's name begins with, folded ("total", "итого"), or None."""
    found = RE["total_row"].match(fold(text)) if text and len(text) <= 80 else None
    return found.group(0) if found else None


def _is_repeated_header(row: list[str], labels: tuple[str, ...]) -> bool:
    same = sum(1 for i, c in enumerate(row) if c and i < len(labels) and fold(c) == fold(labels[i]))
    return same >= REPEATED_CELLS


def repeats_header(row: list[str], labels: tuple[str, ...]) -> bool:
    """A row of words, no number among them, that repeats the header in ``REPEATED_CELLS`` or more
    of its columns (a list printed page by page and read back): the header again, whatever column
    the price turns out to be, so no column's values."""
    return _is_repeated_header(row, labels) and not any(c and parse_decimal(c) is not None for c in row)


def header_price_columns(row: list[str]) -> list[int]:
    """For a row of header words (no number in it, at least two roles named, the price among
    them), the columns it names for the price; else []. Under the sheet's header, such a row
    repeats it, or changes the columns partway down the sheet (a second table under its own
    header) when none of them is the sheet's price column."""
    roles: set[str] = set()
    prices: list[int] = []
    for i, text in enumerate(row):
        if not text:
            continue
        if parse_decimal(text) is not None:
            return []
        got = classify_header(text)
        if got:
            roles.add(got[0])
            if got[0] == "unit_price":
                prices.append(i)
    return prices if len(roles) >= 2 else []


def _texts(row: list[str], skip: set[int]) -> Iterator[str]:
    """The row's text cells (not numbers) outside `skip`, lazily: callers
    mostly need the first one, or whether there is one."""
    return (c for i, c in enumerate(row) if c and i not in skip and parse_decimal(c) is None)


def _no_price_class(r: int, row: list[str], cols: Columns) -> RowClass:
    filled = [c for c in row if c]
    if cell(row, cols.sku) and cell(row, cols.desc):
        return RowClass(r, "skipped", "a SKU and a description but no price")
    if len(filled) == 1:
        text = filled[0]
        if len(text) >= NOTE_CHARS:
            return RowClass(r, "note", "a line of text")
        return RowClass(r, "section", f"a heading: {cap(text)[:40]!r}")
    return RowClass(r, "skipped", "no price in the price column")


class RowClassifier:
    """Classifies body rows; remembers prices since the last heading to spot subtotals, and the
    highest since the last heading or total (None before the first), which a total's sum cannot
    be below."""

    def __init__(self, cols: Columns, decimal: str | None):
        self.cols = cols
        self.decimal = decimal
        self.running = Decimal(0)
        self.highest: Decimal | None = None
        # The items' prices summed since the last heading and since the table's first row, and
        # how many of them: a total sums the one or the other.
        self.summed = 0
        self.whole, self.whole_summed = Decimal(0), 0

    def classify(self, r: int, row: list[str]) -> RowClass:
        cols = self.cols
        if not row or not any(row):
            return RowClass(r, "blank", "empty")
        price_text = cell(row, cols.price)
        value = parse_decimal(price_text, self.decimal) if price_text else None
        # A number under the price label is never a repeat of that label.
        if value is None:
            named = header_price_columns(row)
            if named and cols.price not in named:
                return RowClass(
                    r, MOVED_HEADER, f"a header naming the price in column {col_letter(named[0])}"
                )
            if named or _is_repeated_header(row, cols.labels):
                return RowClass(r, "header", "repeats the header")
        if not price_text:
            got = _no_price_class(r, row, cols)
            if got.kind == "section":
                self.running, self.highest, self.summed = Decimal(0), None, 0
            return got
        return self._priced(r, row, value)

    def _priced(self, r: int, row: list[str], value: Decimal | None) -> RowClass:
        cols = self.cols
        has_id = bool(cell(row, cols.sku) or cell(row, cols.desc))
        if not cell(row, cols.sku):
            first_text = next(_texts(row, {cols.price}), "")
            word = _total_word(cell(row, cols.desc) or first_text)
            if word and value is not None and (self.highest is None or value < self.highest):
                first = self.highest is None
                self._seen(value)
                named = flag(
                    Code.TOTAL_WORD, "description", variant="first" if first else "", row=r, word=word
                )
                if not has_id:
                    return RowClass(r, PRICE_WITHOUT_ITEM, "a price but no SKU or description", named)
                self.running += value
                return RowClass(r, TOTAL_WORD, f"begins with {word!r}, but its price is no sum", named)
            if word:
                self.highest = None
                return RowClass(r, "total", f"a total line: {cap(first_text)[:40]!r}")
        if value is None:
            if has_id:
                return RowClass(r, "item", "an item whose price is not a number")
            return RowClass(r, "note", "text in the price column, no item")
        if has_id:
            summed = 0 if cell(row, cols.sku) else self._sum_of(value)
            if summed:
                self.running, self.summed = Decimal(0), 0
                named = flag(Code.SUM_OF_PRICES, None, row=r, count=summed)
                return RowClass(r, "item", f"a price equal to the sum of the {summed} prices above it", named)
            self.running += value
            self._seen(value)
            return RowClass(r, "item", "a price and a SKU or description")
        if value == self.running and value and next(_texts(row, {cols.price}), None) is None:
            self.running, self.summed = Decimal(0), 0
            return RowClass(r, "total", "a lone number equal to the sum of the prices above it")
        self._seen(value)
        return RowClass(r, PRICE_WITHOUT_ITEM, "a price but no SKU or description")

    def _sum_of(self, value: Decimal) -> int:
        """How many prices above ``value`` sums (two at least: one price is no sum of several),
        since the last heading or since the table's first row; 0 when it sums neither, or is 0."""
        for total, count in ((self.running, self.summed), (self.whole, self.whole_summed)):
            if count >= 2 and value and value == total:
                return count
        return 0

    def _seen(self, value: Decimal) -> None:
        """A price taken into an item: no total below can sum to less."""
        self.highest = value if self.highest is None else max(self.highest, value)
        self.summed += 1
        self.whole += value
        self.whole_summed += 1
