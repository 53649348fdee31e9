"""Invented sheets (tests/catalog/sheetgen.py), one per pattern real sheets show:
no unflagged wrong value, no silent drop, the right outcome."""

import pytest

from tests.catalog import sheetgen

NAMES = sorted(sheetgen.SHEETS)


@pytest.fixture(scope="module")
def results():
    return {name: (gen := sheetgen.SHEETS[name](), sheetgen.run(gen)) for name in NAMES}


def test_there_are_at_least_fifteen_invented_sheets():
    assert len(NAMES) >= 15


@pytest.mark.parametrize("name", NAMES)
def test_generated_sheet_ends_in_the_right_outcome(results, name):
    gen, got = results[name]
    assert got.outcome == gen.outcome, (got.refusal, [s.get("doubts") for s in got.sheets])


@pytest.mark.parametrize("name", NAMES)
def test_generated_sheet_has_no_unflagged_wrong_value(results, name):
    gen, got = results[name]
    assert sheetgen.unflagged_wrong(gen, got) == []


@pytest.mark.parametrize("name", NAMES)
def test_generated_sheet_drops_no_item_row_silently(results, name):
    gen, got = results[name]
    assert sheetgen.silently_dropped(gen, got) == []


@pytest.mark.parametrize("name", [n for n in NAMES if sheetgen.SHEETS[n]().flags])
def test_generated_sheet_flags_the_rows_that_need_a_reviewer(results, name):
    gen, got = results[name]
    codes = {i["source"]["row"]: {f["code"] for f in i["flags"]} for i in got.items}
    assert {row: want & codes.get(row, set()) for row, want in gen.flags.items()} == gen.flags


def test_refused_sheets_say_which_kind_and_that_a_reviewer_can_map_them(results):
    assert "price_matrix" not in {name for name, (gen, _) in results.items() if gen.outcome == "refuse"}
    reasons = {name: got.refusal for name, (gen, got) in results.items() if gen.outcome == "refuse"}
    assert "rate card" in reasons["shipping_rate_card"]
    assert "statistics" in reasons["statistics_table"]
    assert all("reviewer can still map" in r for r in reasons.values())


def test_every_row_of_a_read_sheet_is_accounted_for(results):
    gen, got = results["sections_and_totals"]
    (report,) = got.sheets
    assert sum(report["rows"].values()) == 17
    assert {"section", "total", "blank", "item", "header"} <= set(report["rows"])


def test_xlsx_price_is_the_displayed_value_and_the_source_keeps_the_stored_one(results):
    gen, got = results["formula_prices_xlsx"]
    first = got.items[0]
    assert first["unit_price"] == "8.52"
    assert first["source"]["raw_price"] == "8.52327446244"


@pytest.mark.parametrize("name, words", [("italian_cp1252", "velocità"), ("czech_cp1250", "Řezačka")])
def test_legacy_code_page_is_read_in_the_texts_language(results, name, words):
    _gen, got = results[name]
    assert any(words in i["description"] for i in got.items)
