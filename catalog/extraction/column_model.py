"""The fitted column model: a probability for every role of a column, from its values and header.

The weights, the header vocabulary, the feature names, the temperature and
the confidence threshold live in ``column_model.json`` beside this module,
written by ``make train`` (``bench/corpus/train.py``, scikit-learn, fixed
seed) from the labeled development part of the corpus. Nothing here is
chosen by hand: this module only computes the features the model was fitted
on and applies the weights, in plain Python.

Header words are normalized the same way at fitting and at run time
(``header_tokens``): case folded, accents stripped, a trailing run of vowels
and ``s`` dropped (plurals and simple inflections), long words cut to their
first letters, CJK text taken character by character.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from catalog.extraction.money import ISO_CODES, MAX_NUMBER_CHARS, find_currencies, parse_decimal
from catalog.extraction.packs import normalize_unit, split_pack
from catalog.extraction.text import cap, fold, is_period

MODEL_PATH = Path(__file__).with_name("column_model.json")
SAMPLE_ROWS = 2000
STEM_CHARS = 7
MAJORITY = 0.5  # a value share above half speaks for the column
NUMERIC_COLUMN = 0.8  # a column this much numbers is one of the sheet's numeric columns
TEXT_COLUMN = 0.8  # a column this much words is one of the sheet's text columns
MONEY_ROLES = ("unit_price", "alt_price", "total")  # the roles whose values are amounts of money

_TOKEN = re.compile(r"\w++")
INFLECTION = "aeiouyаеиоуыэюяіїєьйs"  # trailing letters of plurals and simple inflections
_URL = re.compile(r"(?<![\w/.])(?:https?://|www\.)", re.IGNORECASE)
# A file's name or path ("img/item-12.jpg", "report.csv"): a link too. One word ending in a
# lowercase extension of three or four letters (product codes are written in capitals), with a
# letter before it (``_file_name``; two plain patterns, so the time stays linear in the text).
_FILE_WORD = re.compile(r"[\w\-./]++")
_FILE_EXTENSION = re.compile(r"\.[a-z]{3,4}$")
_DATE = re.compile(r"\d{1,4}[-./]\d{1,2}[-./]\d{1,4}(?:\s|T|$)")
_NUM_HYPHEN_NUM = re.compile(r"(?<!\d)\d{1,12}-\d{1,12}(?!\d)")
# Words joined by hyphens or underscores into one token ("fig-sun-dried", "AB-CD-EF",
# "bolt_20_2"): how slugs and supplier codes are written, where a name has spaces.
_JOINED = re.compile(r"(?<![^\W\d_])[^\W\d_]{2,}+(?:[-_][^\W_]++)++")
# A size of two or three measures ("300x400", "25 x 25 x 3 mm", "20х2,0"), each number with a
# unit of up to three letters or none: what a size column holds, where a code has letters and
# digits in any order. Every part is bounded, so a search tries a bounded match at each number.
_MEASURE = r"\d{1,6}+(?:[.,]\d{1,3}+)?+\s{0,2}+(?:[^\W\d_x×х]{1,3}+\.?+\s{0,2}+)?+"
_MEASURES = re.compile(rf"(?<![\d.,]){_MEASURE}(?:[x×х*]\s{{0,2}}+{_MEASURE}){{1,2}}+")


def _is_cjk(ch: str) -> bool:
    return "\u3040" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af" or "\uf900" <= ch <= "\ufaff"


def inflection_stem(word: str) -> str:
    """A word without its trailing vowels and "s" after the third letter: "prezzi" and "prezzo"
    are "prezz". Words of three letters or fewer, and numbers, stay as they are."""
    if len(word) > 3 and not word.isdigit():
        return word[:3] + word[3:].rstrip(INFLECTION)
    return word


def _stem(word: str) -> str:
    return inflection_stem(word)[:STEM_CHARS]


@functools.lru_cache(maxsize=4096)
def header_tokens(text: str) -> frozenset[str]:
    """The normalized words of a header label (see the module's docstring)."""
    if not text or len(text) > 200:
        return frozenset()
    out = set()
    for word in _TOKEN.findall(fold(text)):
        if word.isdigit():
            continue
        cjk = "".join(ch for ch in word if _is_cjk(ch))
        if cjk:
            out.update(cjk)
            rest = "".join(ch for ch in word if not _is_cjk(ch))
            if len(rest) >= 2:
                out.add(_stem(rest))
            continue
        if len(word) >= 2:
            out.add(_stem(word))
    return frozenset(out)


def code_shaped(text: str) -> bool:
    """Letters and digits in one token ("AB-120", "X5"): how supplier codes look."""
    return (
        2 <= len(text) <= 40
        and not any(ch.isspace() for ch in text)
        and any(ch.isdigit() for ch in text)
        and any(ch.isalpha() for ch in text)
    )


def _is_unit_text(text: str) -> bool:
    """A unit ("kg", "шт") or a unit with its pack size ("box of 12", "24 шт"), not a number."""
    if len(text) > 24 or parse_decimal(text) is not None:
        return False
    if normalize_unit(text):
        return True
    unit, pack = split_pack(text)
    return pack is not None and unit is not None and normalize_unit(unit) is not None


def _is_sequential(values: list[int]) -> bool:
    if len(values) < 3:
        return False
    steps = sum(1 for a, b in pairwise(values) if b - a == 1)
    return steps >= 0.8 * (len(values) - 1)


def row_number(text: str) -> int | None:
    """The number of a numbered row: plain ASCII digits no longer than any number the money
    parser reads, bare or closed by a dot as a numbered list writes them ("7", "007", "7.";
    2 development sheets number their rows with a dot); else None."""
    digits = text[:-1] if text.endswith(".") else text
    if len(digits) <= MAX_NUMBER_CHARS and digits.isascii() and digits.isdigit():
        return int(digits)
    return None


def is_running_index(texts: list[str]) -> bool:
    """Row numbers counting up by one ("001", "002"; "1.", "2."); "100,00", "101,00" are
    prices that happen to run on."""
    numbers = [n for n in map(row_number, texts) if n is not None]
    return (
        bool(numbers)
        and not any(parse_decimal(t) is not None for t in texts if row_number(t) is None)
        and _is_sequential(numbers)
    )


def _number_features(texts: list[str], n: int) -> dict[str, float]:
    numbers = [v for v in (parse_decimal(t) for t in texts) if v is not None]
    ints = [int(v) for v in numbers if v == v.to_integral_value()]
    k = max(1, len(numbers))
    median = sorted(abs(v) for v in numbers)[len(numbers) // 2] if numbers else 0
    return {
        "numeric": len(numbers) / n,
        "decimals": (len(numbers) - len(ints)) / k,
        "integers": len(ints) / k,
        "running_index": 1.0 if is_running_index(texts) else 0.0,
        "year_like": sum(1 for i in ints if 1900 <= i <= 2100) / k,
        "magnitude": min(1.0, math.log10(1 + float(median)) / 6) if numbers else 0.0,
        "long_digits": sum(1 for t in texts if t.isdigit() and len(t) >= 8) / n,
        "gtin": sum(1 for t in texts if is_gtin(t)) / n,
    }


def is_gtin(text: str) -> bool:
    """``text`` is a GS1 article number (an EAN, UPC or GTIN of 8 to 14 digits, 9 to 11 when a
    spreadsheet dropped its leading zeros) whose last digit checks: the digits weighed 1, 3, 1, ...
    from the right add up to a multiple of 10. Only one in ten other numbers of that length pass."""
    if not (8 <= len(text) <= 14 and text.isascii() and text.isdigit()):
        return False
    return sum(int(d) * (3 if i % 2 else 1) for i, d in enumerate(reversed(text))) % 10 == 0


def _file_name(text: str) -> bool:
    """``text`` is a file's name or path: one word, a letter, then a lowercase extension."""
    ext = _FILE_EXTENSION.search(text)
    return bool(ext and _FILE_WORD.fullmatch(text) and any(ch.isalpha() for ch in text[: ext.start()]))


def _trimmed(values: list[int]) -> list[int]:
    """``values`` without the lowest and the highest twentieth (a 5% trimmed sample): one note
    or total line among a column's codes does not move how long they are."""
    cut = len(values) // 20
    return sorted(values)[cut : len(values) - cut]


def _text_features(texts: list[str], n: int) -> dict[str, float]:
    lengths = _trimmed([len(t) for t in texts])
    mean = sum(lengths) / len(lengths)
    var = sum((x - mean) ** 2 for x in lengths) / len(lengths)
    distinct = len(set(texts))
    return {
        "constant": 1.0 if distinct == 1 and n >= 2 else 0.0,
        "distinct": distinct / n,
        "mean_len": min(1.0, math.log1p(mean) / 5),
        "len_cv": min(3.0, math.sqrt(var) / mean) if mean else 0.0,
        "words": min(10.0, sum(len(t.split()) for t in texts) / n) / 10,
        "alpha": sum(1 for t in texts if any(ch.isalpha() for ch in t)) / n,
        "digits": sum(1 for t in texts if any(ch.isdigit() for ch in t)) / n,
        "code_shape": sum(1 for t in texts if code_shaped(t)) / n,
        "num_hyphen_num": sum(1 for t in texts if len(t) <= 25 and _NUM_HYPHEN_NUM.fullmatch(t)) / n,
        "joined": sum(1 for t in texts if len(t) <= 60 and _JOINED.fullmatch(t)) / n,
        "measures": sum(1 for t in texts if len(t) <= 30 and _MEASURES.fullmatch(fold(t))) / n,
        "url": sum(1 for t in texts if _URL.search(t) or _file_name(t)) / n,
        "percent": sum(1 for t in texts if "%" in t and len(t) <= 12) / n,
        "date_like": sum(1 for t in texts if _DATE.match(t)) / n,
        "periods": sum(1 for t in texts if is_period(t)) / n,
        "currency_symbol": sum(1 for t in texts if len(t) <= 40 and find_currencies(t)) / n,
        "iso_code": sum(1 for t in texts if t.strip().upper() in ISO_CODES) / n,
        "unit_words": sum(1 for t in texts if _is_unit_text(t)) / n,
    }


def value_features(values: list[str], rows: int, col: int, width: int) -> dict[str, float]:
    """Features of one column from its non-empty ``values`` among ``rows`` sampled rows."""
    texts = [cap(v).strip() for v in values if v and v.strip()]
    base = {
        "filled": len(texts) / max(1, rows),
        "position": col / max(1, width - 1),
        "first_column": 1.0 if col == 0 else 0.0,
        "bias": 1.0,
    }
    if not texts:
        return base
    n = len(texts)
    return {**base, **_number_features(texts, n), **_text_features(texts, n)}


ONE_VALUE = "the same value on every row"


def value_vetoes(f: dict[str, float]) -> dict[str, str]:
    """role -> why the column's values rule it out, whatever its header says."""
    out = {}
    if f.get("constant"):
        out["sku"] = out["description"] = ONE_VALUE
    if f.get("alpha", 0.0) <= MAJORITY and f.get("numeric", 0.0) > MAJORITY:
        out.setdefault("description", "numbers, not text")
    if f.get("url", 0.0) > MAJORITY:
        out["description"] = out["unit_price"] = out["sku"] = "links"
    if f.get("running_index"):
        out["unit_price"] = "a running row number"
    elif f.get("numeric", 0.0) > MAJORITY and f.get("integers") == 1.0 and f.get("year_like") == 1.0:
        out["unit_price"] = "years"
    if f.get("percent", 0.0) > MAJORITY:
        out["unit_price"] = "percentages"
    if f.get("periods", 0.0) > MAJORITY:
        out["sku"] = out["description"] = out["unit_price"] = "dates"
    return out


def _ranked(cols: list[int], feats: list[dict], key: str) -> int | None:
    return max(cols, key=lambda i: (feats[i].get(key, 0.0), -i)) if cols else None


def with_context(feats: list[dict[str, float]]) -> list[dict[str, float]]:
    """The sheet's column features, each with where it stands among its neighbours.

    Roles are relative: the unit price is one of several money columns, the
    description the longest text. Per column: how many numeric columns the
    sheet has, this one's place among them (first, last, order), whether it
    holds the largest numbers, whether it is the longest or most varied text.
    """
    numeric = [i for i, f in enumerate(feats) if f.get("numeric", 0) >= NUMERIC_COLUMN]
    texts = [i for i, f in enumerate(feats) if f.get("alpha", 0) >= TEXT_COLUMN]
    top_mag, longest, varied = (
        _ranked(numeric, feats, "magnitude"),
        _ranked(texts, feats, "mean_len"),
        _ranked(texts, feats, "distinct"),
    )
    out = []
    for i, f in enumerate(feats):
        g = dict(f)
        g["numeric_columns"] = min(1.0, len(numeric) / 8)
        g["text_columns"] = min(1.0, len(texts) / 8)
        if i in numeric:
            k = numeric.index(i)
            g["numeric_first"] = 1.0 if k == 0 else 0.0
            g["numeric_last"] = 1.0 if k == len(numeric) - 1 else 0.0
            g["numeric_order"] = k / max(1, len(numeric) - 1)
            g["largest_numbers"] = 1.0 if i == top_mag else 0.0
        g["longest_text"] = 1.0 if i == longest else 0.0
        g["most_varied_text"] = 1.0 if i == varied else 0.0
        out.append(g)
    return out


# The features that single out the first of the columns tied on a value (``with_context``'s
# ``_ranked``), with the value ranked.
_TIED = {"largest_numbers": "magnitude", "longest_text": "mean_len", "most_varied_text": "distinct"}


def placeless(feats: list[dict[str, float]]) -> list[dict[str, float]]:
    """``with_context`` features with where each column stands replaced by what it is on
    average over every order of the sheet's columns: the model's reading of a column had it
    stood anywhere among them. Of k columns tied for the largest numbers, the longest or the
    most varied text, each is the one singled out in 1/k of the orders."""
    width = len(feats)
    numeric = sum(1 for f in feats if "numeric_order" in f)
    out = []
    for f in feats:
        g = {**f, "position": 0.5 if width > 1 else 0.0, "first_column": 1.0 / max(1, width)}
        if "numeric_order" in f:
            g.update(numeric_first=1.0 / numeric, numeric_last=1.0 / numeric)
            g["numeric_order"] = 0.5 if numeric > 1 else 0.0
        out.append(g)
    for flag, key in _TIED.items():
        chosen = [i for i, f in enumerate(feats) if f.get(flag)]
        if not chosen:
            continue
        best = feats[chosen[0]].get(key, 0.0)
        pool = "numeric_order" if flag == "largest_numbers" else None
        tied = [
            i
            for i, f in enumerate(feats)
            if f.get(key, 0.0) == best and (pool in f if pool else f.get("alpha", 0) >= TEXT_COLUMN)
        ]
        for i in tied:
            out[i][flag] = 1.0 / len(tied)
    return out


def column_values(body: list[list[str]], col: int) -> tuple[list[str], int]:
    """(the column's non-empty values, the number of rows looked at) over the sampled body."""
    sample = [r for r in body if r][:SAMPLE_ROWS]
    return [r[col] for r in sample if col < len(r) and r[col]], len(sample)


def sheet_features(body: list[list[str]], width: int) -> list[dict[str, float]]:
    """``value_features`` of every column of ``body``, over one sample: the rules' vetoes and
    the model's probabilities read the same features, computed once per sheet."""
    sample = [r for r in body if r][:SAMPLE_ROWS]
    return [
        value_features([r[c] for r in sample if c < len(r) and r[c]], len(sample), c, width)
        for c in range(width)
    ]


@dataclass(frozen=True)
class ColumnModel:
    version: str
    roles: tuple[str, ...]
    features: tuple[str, ...]
    vocabulary: tuple[str, ...]
    means: tuple[float, ...]
    scales: tuple[float, ...]
    weights: tuple[tuple[float, ...], ...]  # per role: one weight per feature, then per word
    intercepts: tuple[float, ...]
    temperature: float
    threshold: float  # a role given with at least this probability is right 99.5% of the time
    margin: float  # a column that beats its best rival for a role by less is in doubt
    absent_floor: float  # a free column this likely to hold a role no column took puts it in doubt
    # A role the rules took and the model reads the same way with at least this probability is right
    # 99.5% of the time: when the column's header does not name the role, and when it does.
    agree_threshold: float
    agree_named_threshold: float
    # Per item role the rules took no column for: a column they gave no role this likely to hold
    # it puts the role in doubt (below it, the role is absent 99.5% of the time).
    rules_absent_floor: Mapping[str, float]
    rules_absent_floor_headless: Mapping[str, float]  # the same, fitted on sheets without their header
    # The rules' header words the development part backs (in the headers of their role in two
    # files or more), by word list; None in a model fitted before they were kept: every word then.
    backed_words: tuple[tuple[str, tuple[str, ...]], ...] | None = None

    @functools.cached_property
    def _word_index(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.vocabulary)}

    def vector(self, values: dict[str, float], header: str) -> list[float]:
        x = [
            (values.get(f, 0.0) - m) / s
            for f, m, s in zip(self.features, self.means, self.scales, strict=True)
        ]
        words = [0.0] * len(self.vocabulary)
        for token in header_tokens(header):
            i = self._word_index.get(token)
            if i is not None:
                words[i] = 1.0
        return x + words

    def probabilities(self, values: dict[str, float], header: str) -> dict[str, float]:
        """role -> calibrated probability, for one column."""
        x = self.vector(values, header)
        logits = [
            (b + sum(w * v for w, v in zip(ws, x, strict=True) if v)) / self.temperature
            for ws, b in zip(self.weights, self.intercepts, strict=True)
        ]
        top = max(logits)
        exps = [math.exp(v - top) for v in logits]
        total = sum(exps)
        return {role: e / total for role, e in zip(self.roles, exps, strict=True)}

    def knows(self, header: str) -> bool:
        """Whether any word of ``header`` is in the model's vocabulary."""
        return any(token in self._word_index for token in header_tokens(header))

    def header_words(self, role: str) -> set[str]:
        """The vocabulary words whose weight for ``role`` is positive."""
        ws = self.weights[self.roles.index(role)][len(self.features) :]
        return {w for w, v in zip(self.vocabulary, ws, strict=True) if v > 0}


def model_from_json(data: dict) -> ColumnModel:
    return ColumnModel(
        version=data["version"],
        roles=tuple(data["roles"]),
        features=tuple(data["features"]),
        vocabulary=tuple(data["vocabulary"]),
        means=tuple(data["means"]),
        scales=tuple(data["scales"]),
        weights=tuple(tuple(w) for w in data["weights"]),
        intercepts=tuple(data["intercepts"]),
        temperature=float(data["temperature"]),
        threshold=float(data["threshold"]),
        margin=float(data["margin"]),
        absent_floor=float(data["absent_floor"]),
        # A model file fitted before the agreement was calibrated: every role stays in doubt.
        agree_threshold=float(data.get("agree_threshold", 1.0)),
        agree_named_threshold=float(data.get("agree_named_threshold", 1.0)),
        # Before it was fitted, a role the rules did not take is never in doubt.
        rules_absent_floor={r: float(v) for r, v in (data.get("rules_absent_floor") or {}).items()},
        rules_absent_floor_headless={
            r: float(v)
            for r, v in (
                data.get("rules_absent_floor_headless") or data.get("rules_absent_floor") or {}
            ).items()
        },
        backed_words=None
        if data.get("backed_words") is None
        else tuple((name, tuple(words)) for name, words in sorted(data["backed_words"].items())),
    )


@functools.lru_cache(maxsize=1)
def load_model() -> ColumnModel:
    return model_from_json(json.loads(MODEL_PATH.read_text(encoding="utf-8")))
