"""Every real supplier sheet ends in a sensible outcome (needs ../shared/corpus)."""

import functools
from pathlib import Path

import pytest

from catalog.errors import NotAnItemList
from catalog.extraction import extract_items, find_currencies
from catalog.reading import read_table
from catalog.validation import validate_items

REPO = Path(__file__).resolve().parents[2]
REAL = REPO.parent / "shared" / "corpus" / "real"
FILES = sorted(p.name for p in REAL.iterdir()) if REAL.is_dir() else []

pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason="corpus folder ../shared/corpus/real is absent")


@functools.cache  # each file is read once for all the checks
def outcome(name):
    table = read_table(REAL / name, filename=name)
    try:
        return table, extract_items(table)
    except NotAnItemList as exc:
        return table, exc


def test_corpus_has_all_26_sheets():
    assert len(FILES) == 26


@pytest.mark.parametrize("name", FILES)
def test_real_sheet_gives_items_or_a_reasoned_refusal(name):
    _table, result = outcome(name)
    if isinstance(result, NotAnItemList):
        assert result.reason
    else:
        assert result.items


@pytest.mark.parametrize("name", FILES)
def test_real_sheet_currency_is_never_invented(name):
    table, result = outcome(name)
    if isinstance(result, NotAnItemList):
        return
    named = {}
    for sheet in table.sheets:
        found = set()
        for row in sheet.rows:
            for cell in row:
                found |= find_currencies(cell)
        for runs in sheet.currency_formats.values():
            found |= {code for _a, _b, code in runs}
        named[sheet.name] = found
    invented = [i for i in result.items if i["currency"] and i["currency"] not in named[i["source"]["sheet"]]]
    assert invented == []


@pytest.mark.parametrize("name", FILES)
def test_real_sheet_items_cite_rows_that_hold_them(name):
    table, result = outcome(name)
    if isinstance(result, NotAnItemList):
        return
    unsupported = [
        i
        for i in validate_items(result.items, table)
        if any(f["code"] == "unsupported_source" for f in i["flags"])
    ]
    assert unsupported == []


@pytest.mark.parametrize("name", FILES)
def test_real_sheet_items_without_currency_are_flagged(name):
    table, result = outcome(name)
    if isinstance(result, NotAnItemList):
        return
    unflagged = [
        i
        for i in validate_items(result.items, table)
        if not i["currency"] and "missing_currency" not in {f["code"] for f in i["flags"]}
    ]
    assert unflagged == []


def test_a_real_price_matrix_is_proposed_cell_by_cell_for_review():
    _table, result = outcome("blinds_pl_matrix_cennik.xlsx")
    (report,) = [s for s in result.sheets if s["status"] == "read"]
    assert report["kind"] == "matrix" and result.needs_confirmation
    assert len(result.items) == report["cells"]["priced"] > 100
    assert all(set(i["source"]) >= {"sheet", "row", "column"} for i in result.items)


def test_truth_file_digikey_reads_currency_from_sibling_header():
    _table, result = outcome("digikey_cart_cad_cover.csv")
    assert {i["currency"] for i in result.items} == {"CAD"}


def test_cp1251_file_reads_cyrillic_text():
    table = read_table(REAL / "grocery_ru_metro_pricelist.csv", filename="grocery_ru_metro_pricelist.csv")
    assert table.sheets[0].rows[0][1] == "Хурма"
