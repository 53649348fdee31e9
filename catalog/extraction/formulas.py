"""Money columns computed from others (pure).

A price list often carries a column that is a formula of other columns: a
price with tax (the net price × 1.19), a discount or a markup (× 0.5, ×
1.3), a total (quantity × unit price). When the column taken as the unit
price is such a formula of another column, which of them is the unit price
is a choice a reviewer confirms; when it is a factor of a total, the total
is recognized and left alone. A price per kilogram or litre beside the
price (the row's price divided by its content, "0.75 l") is recognized too:
the price is the other column (``per_measure``).
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from decimal import Decimal
from itertools import pairwise
from statistics import median

from catalog.extraction.money import parse_decimal
from catalog.extraction.packs import content_amount
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


def _contents(rows: list[list[str]], width: int) -> dict[int, list[Decimal | None]]:
    """Columns stating what one item holds ("0.75 l", "500 g"): col -> amount per row."""
    out = {}
    for col in range(width):
        probe = [content_amount(t) for r in rows[:_PROBE_ROWS] if (t := cell(r, col))]
        if sum(1 for v in probe if v) < min(MIN_ROWS, len(rows)):
            continue
        amounts = [got[1] if (got := content_amount(cell(r, col))) else None for r in rows]
        if sum(1 for v in amounts if v) >= MIN_ROWS:
            out[col] = amounts
    return out


def _linear_fit(y: list, x: list) -> int:
    """On how many rows ``y`` is a × ``x`` + b (to half a percent, or a cent), for the a and b
    most rows agree on (the median slope between neighbouring rows, then the median offset:
    a deposit in every price); 0 when fewer than ``PRODUCT_SHARE`` of the rows holding both fit."""
    pairs = [(float(a), float(b)) for a, b in zip(y, x, strict=True) if a and b and a > 0 and b > 0]
    if len(pairs) < MIN_ROWS or len({b for _a, b in pairs}) < 3:
        return 0
    slopes = [(y2 - y1) / (x2 - x1) for (y1, x1), (y2, x2) in pairwise(pairs) if x2 != x1]
    if not slopes:
        return 0
    slope = median(slopes)
    if slope <= 0:
        return 0
    offset = median(a - slope * b for a, b in pairs)
    fit = sum(1 for a, b in pairs if _close(a - offset, slope, b))
    return fit if fit >= PRODUCT_SHARE * len(pairs) else 0


def per_measure(body: list[list[str]], width: int, price: int, decimal: str | None) -> tuple[int, int] | None:
    """(the column holding the price, the content column) when the price column is a price per
    measure: its value times the row's content ("0.30 kg", "0.75 l") is, up to a factor and a
    constant (per 100 g, a deposit), another money column's value on most rows, and on more rows
    than the price column alone is (a copy or a markup of it; on a sheet of one bottle size the
    two cannot be told apart). Of several such columns, the one most rows fit, then the leftmost."""
    rows = [r for r in body[:_SAMPLE] if any(r)]
    contents = _contents(rows, width)
    if not contents:
        return None
    numbers = _numbers(body, width, decimal)
    if price not in numbers:
        return None
    plain = {col: _linear_fit(values, numbers[price]) for col, values in numbers.items() if col != price}
    best = None
    for content, amounts in contents.items():
        per = [q * a if q and a else None for q, a in zip(numbers[price], amounts, strict=True)]
        for col, alone in plain.items():
            fit = _linear_fit(numbers[col], per) if col != content else 0
            if fit > alone and (best is None or fit > best[0]):
                best = (fit, col, content)
    return (best[1], best[2]) if best else None


def _midway(first: Decimal, mid: Decimal, last: Decimal) -> bool:
    """``mid`` lies strictly between the two others, all three are written alike (as many
    decimal places), and ``mid`` is their mean as far as it is written: to half a unit of its
    last digit that is not a trailing zero ("1703.0" half a unit, "1.75" half a cent)."""
    if not (first < mid < last or last < mid < first):
        return False
    if not first.as_tuple().exponent == mid.as_tuple().exponent == last.as_tuple().exponent:
        return False
    written = Decimal(1).scaleb(min(mid.normalize().as_tuple().exponent, 0)) / 2
    return abs((first + last) / 2 - mid) <= written


def _fixed_step(first: list, last: list) -> bool:
    """The two columns differ by one amount on most rows (tiers a fixed sum apart)."""
    steps = [b - a for a, b in zip(first, last, strict=True) if a is not None and b is not None]
    return bool(steps) and collections.Counter(steps).most_common(1)[0][1] >= RATIO_SHARE * len(steps)


def midpoint(
    body: list[list[str]], width: int, price: int, decimal: str | None
) -> tuple[int, int, int] | None:
    """(first, middle, last column) when the price column is one of three money columns of which
    the middle one is, row after row, the mean of the other two: a low, an average and a high
    price observed (a market's statistics, either way round), not an offer. Rows where the outer
    two are equal (one price observed) count for nothing; outer columns at a fixed ratio or a
    fixed sum apart (tiers or tax rates in even steps hold means too) are no spread."""
    numbers = _numbers(body, width, decimal)
    if price not in numbers:
        return None
    cols = sorted(numbers)
    for i, first in enumerate(cols):
        for j, mid in enumerate(cols[i + 1 :], i + 1):
            for last in cols[j + 1 :]:
                if price not in (first, mid, last):
                    continue
                rows = [
                    (a, b, c)
                    for a, b, c in zip(numbers[first], numbers[mid], numbers[last], strict=True)
                    if a is not None and b is not None and c is not None and a != c
                ]
                if len(rows) < MIN_ROWS:
                    continue
                if sum(1 for r in rows if _midway(*r)) < PRODUCT_SHARE * len(rows):
                    continue
                if _ratio(numbers[last], numbers[first]) is None and not _fixed_step(
                    numbers[first], numbers[last]
                ):
                    return first, mid, last
    return None
