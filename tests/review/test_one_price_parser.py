"""One price parser for the whole product: the review app reads what a
reviewer types with catalog.extraction's parsers and has none of its own."""

import ast
from pathlib import Path

import pytest

from catalog.extraction import typed_price
from review.edits import value_check

ROOT = Path(__file__).resolve().parents[2]


def _parses_numbers_itself(source: str) -> list[str]:
    """Decimal(...) calls (text read as a number), and patterns that match digits."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name == "Decimal":
                found.append(f"{name}(...)")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "\\d" in node.value:
            found.append(f"pattern {node.value!r}")
    return found


def test_the_scan_finds_a_parser_of_its_own():
    source = 'import re\nP = re.compile(r"[0-9]\\d*")\nx = decimal.Decimal(s)\ny = float(x)\n'
    assert sorted(_parses_numbers_itself(source)) == ["Decimal(...)", "pattern '[0-9]\\\\d*'"]


def test_the_review_app_has_no_number_parser_of_its_own():
    offending = [
        f"{path.relative_to(ROOT)}: {what}"
        for path in sorted((ROOT / "review").rglob("*.py"))
        if "migrations" not in path.parts
        for what in _parses_numbers_itself(path.read_text())
    ]
    assert offending == []


@pytest.mark.parametrize("typed", ["1.10", "1,10", "12", " 7.5 ", "0", "-1", "1.234,50", "1e3", "abc", ""])
def test_a_typed_price_is_read_as_the_catalog_reads_it(typed):
    stored, refused = value_check(name="unit_price", value=typed)
    assert stored == typed_price(typed)
    assert (refused is None) == (typed_price(typed) is not None)
