"""The fitted sheet model: how likely a sheet read as items is a table that is no item list.

Rate cards and statistics often pass every rule an item list must pass: a
column of text names the rows, a column of numbers prices them. What tells
them apart is the sheet as a whole: the rows are named by a few repeated
words, a place or a date rather than by varied item names; several numeric
columns of one order of magnitude stand side by side under headers that name
no role (places, fuels, months). This module measures that, per sheet, from
the roles the items are taken by and the column model's reading of each
column, and applies a logistic regression fitted on the labeled development
sheets (``bench/corpus/train_sheets.py``, ``make train``; the weights and
the threshold live in ``sheet_model.json``).

The threshold is fitted too: half way from the highest out-of-fold score any
development item-list sheet got (as it is, and without its header, with
header words no dictionary knows, cut to its first 5 or 20 items, with a
running number or a stock count added) to 1. A
sheet whose header names its item names (a description or SKU column) is an
item list by that alone: the model does not judge it.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path

from catalog.extraction.column_model import MONEY_ROLES, NUMERIC_COLUMN, load_model
from catalog.extraction.headers import classify_header

MODEL_PATH = Path(__file__).with_name("sheet_model.json")
FEATURES = (
    "name_distinct",
    "name_words",
    "name_description",
    "price_confidence",
    "dated",
    "comparable_numbers",
    "has_sku",
    "unnamed_numbers",
)
_NAME_ROLES = ("description", "sku")
# Numeric columns count with the price when their median is within one order of magnitude of
# its median: the column model's magnitude is log10(1 + median) / 6.
_DECADE = 1 / 6


@dataclass(frozen=True)
class SheetModel:
    version: str
    features: tuple[str, ...]
    weights: tuple[float, ...]
    intercept: float
    threshold: float  # a sheet scored at least this is refused as no item list

    def probability(self, values: dict[str, float]) -> float:
        z = self.intercept + sum(
            w * values.get(f, 0.0) for f, w in zip(self.features, self.weights, strict=True)
        )
        return 1 / (1 + math.exp(-z))


@functools.lru_cache(maxsize=1)
def load_sheet_model() -> SheetModel | None:
    """The fitted model, or None before ``make train`` wrote one (no sheet is judged)."""
    if not MODEL_PATH.exists():
        return None
    data = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    return SheetModel(
        version=data["version"],
        features=tuple(data["features"]),
        weights=tuple(float(w) for w in data["weights"]),
        intercept=float(data["intercept"]),
        threshold=float(data["threshold"]),
    )


def header_names_items(labels: list[str]) -> bool:
    """A header cell names a description or SKU column: an item-list reading fits."""
    return any((got := classify_header(label)) and got[0] in _NAME_ROLES for label in labels if label)


def _named(label: str) -> bool:
    return classify_header(label) is not None or load_model().knows(label)


def sheet_features(labels: list[str], roles: dict[str, int], columns: list[tuple]) -> dict[str, float]:
    """The model's features of one sheet: its header ``labels``, the ``roles`` its items are
    taken by (role -> column) and, per column, ``columns.column_probabilities``' (probabilities,
    vetoes, value features). Every feature lies in [0, 1]. How many rows the sheet has is none
    of them: a short item list is an item list."""
    feats = [c[2] for c in columns]
    probs = [c[0] for c in columns]
    name = roles.get("description", roles.get("sku"))
    price = roles.get("unit_price")
    named = feats[name] if name is not None and name < len(feats) else {}
    numeric = [i for i, f in enumerate(feats) if f.get("numeric", 0.0) >= NUMERIC_COLUMN]
    comparable = []
    if price is not None and price < len(feats):
        size = feats[price].get("magnitude", 0.0)
        comparable = [i for i in numeric if abs(feats[i].get("magnitude", 0.0) - size) <= _DECADE]
    # The numeric columns read as money: a running number or a stock count beside the prices
    # is no price tier.
    headed = [
        i
        for i in numeric
        if i < len(labels) and labels[i] and probs[i] and max(probs[i], key=probs[i].get) in MONEY_ROLES
    ]
    return {
        "name_distinct": named.get("distinct", 0.0),
        "name_words": named.get("words", 0.0),
        "name_description": probs[name].get("description", 0.0) if named else 0.0,
        "price_confidence": probs[price].get("unit_price", 0.0)
        if price is not None and price < len(probs)
        else 0.0,
        "dated": max((max(f.get("date_like", 0.0), f.get("periods", 0.0)) for f in feats), default=0.0),
        "comparable_numbers": min(1.0, len(comparable) / 8),
        "has_sku": 1.0 if "sku" in roles else 0.0,
        "unnamed_numbers": sum(1 for i in headed if not _named(labels[i])) / len(headed)
        if len(headed) >= 2
        else 0.0,
    }
