"""Every pattern of the extractor runs in time linear in the text it reads.

Each compiled pattern of the extraction modules, and each function that
applies patterns to cell text, runs on adversarial inputs of 5,000 and
50,000 characters; the ratio of the two times (best of several runs, both
measured in this run) must stay near 10, the ratio of the lengths. A
pattern that backtracks quadratically shows a ratio near 100.
"""

import functools
import re
import time
import types

import pytest

import catalog.codepages
import catalog.extraction.column_model
import catalog.readers.common
import catalog.xlsx
import catalog.extraction.columns
import catalog.extraction.headers
import catalog.extraction.layout
import catalog.extraction.matrix
import catalog.extraction.money
import catalog.extraction.packs
import catalog.extraction.rows
import catalog.extraction.text
import catalog.validation
from catalog.extraction import (
    MAX_CELL_CHARS,
    cap,
    classify_header,
    detect_currency,
    extract,
    find_currencies,
    fold,
    normalize_unit,
    pack_in_description,
    parse_decimal,
    split_pack,
    unit_ambiguity,
)
from catalog.reading import Sheet, Table

MODULES = (
    catalog.extraction.text,
    catalog.extraction.money,
    catalog.extraction.packs,
    catalog.extraction.column_model,
    catalog.extraction.headers,
    catalog.extraction.columns,
    catalog.extraction.layout,
    catalog.extraction.rows,
    catalog.extraction.matrix,
    catalog.validation,
    catalog.codepages,
)
SMALL, LARGE = 5_000, 50_000
# Linear growth gives about 10 (measured here: at most 18 over every pattern and unit; long
# alternations of words grow faster where the larger text outgrows the CPU's caches, up to 50
# at 10,000 and 100,000 characters); quadratic growth is 100 or more.
# Each limit also allows three times a baseline measured in the same run on
# the same text (a pattern known to be linear), so a loaded machine moves both.
MAX_RATIO = 70
BASELINE = re.compile(r"(?<![\w])(?:qqqzzz)(?![\w])")

# Repeating units that make backtracking patterns try every split.
UNITS = ("1", " ", "1 ", "1,", "1.", "1x", "a", "a1", "x1 ", "(1 ", "- ", "€1", "do 1 ", "ignore ")


def adversarial(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n] + "!"


def _patterns():
    seen = {}
    for module in MODULES:
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern):
                seen[f"{module.__name__}.{name}"] = value
            elif isinstance(value, dict):
                for key, item in value.items():
                    if isinstance(item, re.Pattern):
                        seen[f"{module.__name__}.{name}[{key}]"] = item
    return seen


PATTERNS = _patterns()


def _best_time(func, text: str, loops: int, repeat: int = 7) -> float:
    """Seconds per call: the best of ``repeat`` runs of ``loops`` calls."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(loops):
            func(text)
        best = min(best, (time.perf_counter() - start) / loops)
    return best


def _ratio(func, unit: str, small_n: int = SMALL, large_n: int = LARGE, repeat: int = 7) -> float:
    small_text, large_text = adversarial(unit, small_n), adversarial(unit, large_n)
    func(large_text)  # warm up: the first pass over a large text pays for its allocation
    once = _best_time(func, small_text, 1, repeat=1)
    loops = max(1, min(100, int(0.001 / max(once, 1e-7))))  # about 1 ms per small run
    small = _best_time(func, small_text, loops, repeat)
    large = _best_time(func, large_text, max(1, loops // 10), repeat)
    return large / max(small, 1e-7)


@functools.cache
def _limit(unit: str) -> float:
    """The bound for `unit`: a linear pattern's ratio on this machine, measured once per run, with room."""
    return max(MAX_RATIO, 3 * _ratio(BASELINE.search, unit))


# A first measure takes the best of 2 runs; only a ratio past this share of
# the limit (linear patterns measured at most 18 of 70) is measured again
# with the best of 7, and that measure decides.
SCREEN = 0.4


def _over(func, units, small_n: int = SMALL, large_n: int = LARGE) -> list[tuple[str, float, float]]:
    """(unit, ratio, limit) for each unit on which `func` grows faster than linearly."""
    over = []
    for unit in units:
        limit = _limit(unit)
        ratio = _ratio(func, unit, small_n, large_n, repeat=2)
        if ratio >= SCREEN * limit:
            ratio = _ratio(func, unit, small_n, large_n)
        if ratio >= limit:
            over.append((unit, ratio, limit))
    return over


def test_the_extractor_has_patterns_to_check():
    assert len(PATTERNS) >= 30


def test_a_pattern_that_backtracks_is_over_the_limit():
    # A pattern that backtracks cubically, on 100 and 1,000 characters (seconds per search
    # beyond): its ratio is several hundred. A quadratic one's, about 100, lies too near the
    # limit of 70 for this check of the check to pass on a loaded machine every time.
    assert [unit for unit, *_ in _over(re.compile(r"1*1*b").search, ["1", "a"], 100, 1_000)] == ["1"]


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_pattern_grows_linearly_on_adversarial_text(name):
    assert _over(PATTERNS[name].search, UNITS) == []


def _one_row_extract(text: str):
    return extract(
        Table(
            sheets=[
                Sheet(name="S", rows=[["Code", "Name", "Unit", "Price"], [text[:50], text, text, "1.50"]])
            ]
        )
    )


FUNCTIONS = {
    "fold": fold,
    "find_currencies": find_currencies,
    "detect_currency": detect_currency,
    "parse_decimal": parse_decimal,
    "split_pack": split_pack,
    "pack_in_description": pack_in_description,
    "classify_header": classify_header,
    "normalize_unit": normalize_unit,
    "unit_ambiguity": lambda t: unit_ambiguity("ml", t),
    "is_instruction": catalog.validation.is_instruction,
    "language_fit": catalog.codepages.language_fit,
    "east_asian_fit": catalog.codepages.east_asian_fit,
    "extract": _one_row_extract,
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_text_function_grows_linearly_on_adversarial_text(name):
    assert _over(FUNCTIONS[name], UNITS) == []


def test_cell_text_is_capped_at_excels_limit_before_any_pattern():
    assert len(cap("x" * 1_000_000)) == MAX_CELL_CHARS == 32_767


def test_patterns_are_collected_from_every_extraction_module():
    assert {p.rsplit(".", 1)[0].split("[")[0] for p in PATTERNS} >= {
        m.__name__ for m in MODULES if any(isinstance(v, re.Pattern) for v in vars(m).values())
    }
    assert all(isinstance(m, types.ModuleType) for m in MODULES)


# Number formats come from the workbook's styles, as long as the uploader
# likes. Measured at 1,000 and 10,000 characters: a quadratic pattern there
# shows a ratio near 100 in seconds instead of running for minutes.
FORMAT_UNITS = ("[", "[$", "[$-", "[$-1", '"', '"a', "\\", "_", "*", "0.", ".0", "#,", "[a]")


def _uncached_currency(fmt: str):
    catalog.readers.common._format_cache.clear()
    return catalog.readers.common.currency_from_number_format(fmt)


FORMAT_FUNCTIONS = {
    "currency_from_number_format": _uncached_currency,
    "decimal_places_of_format": catalog.readers.common.decimal_places_of_format,
    "is_date_format": catalog.xlsx.is_date_format,
}
FORMAT_PATTERNS = {
    f"{module.__name__}.{name}": value
    for module in (catalog.readers.common, catalog.xlsx)
    for name, value in vars(module).items()
    if isinstance(value, re.Pattern)
}


@pytest.mark.parametrize("name", sorted(FORMAT_FUNCTIONS) + sorted(FORMAT_PATTERNS))
def test_number_format_reading_grows_linearly_on_adversarial_formats(name):
    func = FORMAT_FUNCTIONS.get(name) or FORMAT_PATTERNS[name].search
    assert _over(func, FORMAT_UNITS, 1_000, 10_000) == []
