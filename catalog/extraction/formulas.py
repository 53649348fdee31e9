"""Money columns computed from others (pure).

A price list often carries a column that is a formula of other columns: a
price with tax (the net price × 1.19), a discount or a markup (× 0.5, ×
1.3), a total (quantity × unit price). When the column taken as the unit
price is such a formula of another column, which of them is the unit price
is a choice a reviewer confirms; when it is a factor of a total, the total
is recognized and left alone.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from decimal import Decimal

from catalog.extraction.money import parse_decimal
from catalog.extraction.text import cell

_SAMPLE = 200  # body rows compared
_PROBE_ROWS = 20  # rows looked at first: a column with no number there is not parsed further
_MAX_COLUMNS = 40  # numeric columns compared with each other
MIN_ROWS = 5  # rows holding both values, at least
RATIO_SHARE = 0.6  # of those rows at one ratio (mixed tax rates leave the rest at another)
PRODUCT_SHARE = 0.8  # of rows where one column is the product of two others
_PLACES = Decimal("0.001")
_BUCKET = Decimal("0.01")
_TOLERANCE = Decimal("0.005")


@dataclass(frozen=True)
class Derived:
    kind: str  # "ratio": price = other × factor; "total": price = first × second
    columns: tuple[int, ...]  # (other,) or (first, second)
    factor: Decimal | None = None


def _numbers(body: list[list[str]], width: int, decimal: str | None) -> dict[int, list[Decimal | None]]:
    rows = [r for r in body[:_SAMPLE] if any(r)]
    out = {}
    for col in range(width):
        probe = [parse_decimal(t, decimal) for r in rows[:_PROBE_ROWS] if (t := cell(r, col))]
        if sum(1 for v in probe if v is not None) < min(MIN_ROWS, len(rows)):
            continue  # no numbers in its first rows: text is slow to parse and holds no price
        values = [parse_decimal(cell(r, col), decimal) for r in rows]
        if sum(1 for v in values if v) >= MIN_ROWS:
            out[col] = values
        if len(out) >= _MAX_COLUMNS:
            break
    return out


def _ratio(price: list, other: list) -> Decimal | None:
    """The factor that makes ``other`` into ``price`` on most rows (to half a
    percent: one of them may be rounded), or None."""
    pairs = [(p, o) for p, o in zip(price, other, strict=True) if p and o and p > 0 and o > 0]
    if len(pairs) < MIN_ROWS or len({p for p, _o in pairs}) < 3:
        return None
    ratios = [p / o for p, o in pairs]
    bucket, _n = collections.Counter(r.quantize(_BUCKET) for r in ratios).most_common(1)[0]
    near = sorted(r for r in ratios if r.quantize(_BUCKET) == bucket)
    factor = near[len(near) // 2]
    close = sum(1 for r in ratios if abs(r - factor) <= factor * _TOLERANCE)
    if abs(factor - 1) <= _TOLERANCE or close < RATIO_SHARE * len(pairs):
        return None
    return factor.quantize(_PLACES)


def _close(t: float, a: float, b: float) -> bool:
    return abs(a * b - t) <= max(abs(t) * 0.005, 0.01)


def _product(total: list, first: list, second: list) -> bool:
    """``total`` is ``first`` × ``second`` on most rows, neither factor a plain 1."""
    rows = [
        (float(t), float(a), float(b))
        for t, a, b in zip(total, first, second, strict=True)
        if t and a is not None and b is not None
    ]
    if len(rows) < MIN_ROWS or sum(1 for r in rows[:MIN_ROWS] if _close(*r)) < MIN_ROWS - 1:
        return False  # the first rows already disagree: most pairs stop here
    if sum(1 for _t, a, b in rows if a != 1 and b != 1) < 0.5 * len(rows):
        return False  # a quantity of 1 makes any column the "total" of its copy
    return sum(1 for r in rows if _close(*r)) >= PRODUCT_SHARE * len(rows)


@dataclass(frozen=True)
class Relations:
    derived: Derived | None  # the price column computed from others: a choice to confirm
    total_of: tuple[int, int] | None  # (a total column, its other factor) of which the price is a factor


def price_relations(body: list[list[str]], width: int, price: int, decimal: str | None) -> Relations:
    """How the price column relates to the other money columns."""
    numbers = _numbers(body, width, decimal)
    if price not in numbers:
        return Relations(None, None)
    others = [c for c in numbers if c != price]
    for i, first in enumerate(others):
        for second in others[i + 1 :]:
            if _product(numbers[price], numbers[first], numbers[second]):
                return Relations(Derived("total", (first, second)), None)
    for total in others:
        for other in others:
            if other != total and _product(numbers[total], numbers[price], numbers[other]):
                return Relations(None, (total, other))
    for other in others:
        factor = _ratio(numbers[price], numbers[other])
        if factor is not None:
            return Relations(Derived("ratio", (other,), factor), None)
    return Relations(None, None)
