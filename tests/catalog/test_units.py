"""Units of sale normalized to UN/CEFACT Recommendation 20 codes (pure)."""

import pytest

from catalog.units import (
    SOURCE,
    UNITS,
    unit_choices,
    unit_is_ambiguous,
    unit_label,
    unit_normalize,
)


@pytest.mark.parametrize(
    "written, code",
    [
        # counted items, in every supported language
        ("piece", "H87"),
        ("pcs", "H87"),
        ("each", "H87"),
        ("EA", "H87"),
        ("Stück", "H87"),
        ("Stk.", "H87"),
        ("St", "H87"),
        ("ST.", "H87"),
        ("pièce", "H87"),
        ("UN", "H87"),
        ("ud.", "H87"),
        ("pz", "H87"),
        ("stuks", "H87"),
        ("peça", "H87"),
        ("ks", "H87"),
        ("szt.", "H87"),
        ("шт.", "H87"),
        ("adet", "H87"),
        ("个", "H87"),
        ("個", "H87"),
        # Spanish abbreviations
        ("MT", "MTR"),
        ("JG", "SET"),
        ("PQ", "PK"),
        ("RO", "RO"),
        # German packing unit
        ("VE", "PK"),
        # packages
        ("box", "BX"),
        ("Karton", "CT"),
        ("caja", "BX"),
        ("jar", "JR"),
        ("pot", "JR"),
        ("bottle", "BO"),
        ("Flasche", "BO"),
        ("can", "CA"),
        ("bag", "BG"),
        ("roll", "RO"),
        ("rouleau", "RO"),
        ("pack", "PK"),
        ("упак.", "PK"),
        ("paket", "PK"),
        ("case", "CS"),
        ("ケース", "CS"),
        ("箱", "BX"),
        ("dozen", "DZN"),
        ("pair", "PR"),
        ("Paar", "PR"),
        ("set", "SET"),
        ("комплект", "SET"),
        # measures
        ("kg", "KGM"),
        ("KGS", "KGM"),
        ("㎏", "KGM"),
        ("公斤", "KGM"),
        ("g", "GRM"),
        ("l", "LTR"),
        ("Ltr.", "LTR"),
        ("ml", "MLT"),
        ("m", "MTR"),
        ("метр", "MTR"),
        ("lfm", "LM"),
        ("linear metre", "LM"),
        ("пог. м", "LM"),
        ("mb", "LM"),
        ("m²", "MTK"),
        ("qm", "MTK"),
        ("кв.м", "MTK"),
        ("m3", "MTQ"),
        ("m³", "MTQ"),
        ("t", "TNE"),
        ("sq ft", "FTK"),
        # time
        ("hour", "HUR"),
        ("Std.", "HUR"),
        ("час", "HUR"),
        ("saat", "HUR"),
        ("時間", "HUR"),
        ("day", "DAY"),
        ("Tag", "DAY"),
        ("jour", "DAY"),
        ("天", "DAY"),
        # written with "per" or a slash
        ("per kg", "KGM"),
        ("/Stk", "H87"),
        ("pro Stück", "H87"),
        # codes typed as codes
        ("KGM", "KGM"),
        ("MTK", "MTK"),
        ("H87", "H87"),
        ("C62", "C62"),
    ],
)
def test_written_units_get_their_code(written, code):
    assert unit_normalize(written) == (code, [])


def test_a_pair_is_not_read_as_the_word_per():
    # "par" is Spanish for a pair and French for "per": alone it is the unit.
    assert unit_normalize("par") == ("PR", [])
    assert unit_normalize("par kg") == ("KGM", [])


@pytest.mark.parametrize("written", ["ME", "units", "Einheit", "ед.", "u"])
def test_ambiguous_units_have_no_code_but_candidates(written):
    code, candidates = unit_normalize(written)
    assert code is None
    assert candidates and candidates[0] == "H87"
    assert unit_is_ambiguous(written)


def test_an_unknown_unit_gets_the_nearest_known_ones():
    code, candidates = unit_normalize("boxx")
    assert code is None
    assert "BX" in candidates and len(candidates) <= 3
    assert unit_normalize("kilogrm")[1][0] == "KGM"


def test_nothing_written_has_no_code_and_no_candidates():
    assert unit_normalize("") == (None, [])
    assert unit_normalize(None) == (None, [])
    assert unit_normalize("   ") == (None, [])


def test_the_result_cannot_be_changed_by_a_caller():
    unit_normalize("boxx")[1].clear()
    assert unit_normalize("boxx")[1]


def test_every_code_is_unique_and_every_short_form_maps_back_to_its_code():
    codes = [unit.code for unit in UNITS]
    assert len(codes) == len(set(codes))
    for unit in UNITS:
        assert unit_normalize(unit.short) == (unit.code, []), unit


def test_labels_and_choices_cover_the_whole_list():
    assert unit_label("BX") == "box (BX)"
    choices = unit_choices()
    assert len(choices) == len(UNITS) > 40
    assert ("kg", "kilogram (KGM)") in choices


def test_the_source_is_named():
    assert "Recommendation No. 20" in SOURCE and "Revision 17" in SOURCE


# --- validation reads units through this table ---------------------------------------


def _validated_flags(unit: str) -> list[dict]:
    from catalog.reading import Sheet, Table
    from catalog.validation import validate_items

    table = Table(
        sheets=[Sheet(name="Sheet1", rows=[["SKU", "Name", "Unit", "Price"], ["A1", "Apple", unit, "1.50"]])]
    )
    item = {
        "sku": "A1",
        "description": "Apple",
        "unit": unit,
        "pack_size": None,
        "unit_price": "1.50",
        "currency": "EUR",
        "source": {"sheet": "Sheet1", "row": 2},
    }
    return validate_items([item], table)[0]["flags"]


@pytest.mark.parametrize("unit", ["jar", "pot", "Stk", "VE", "lfm", "ks", "adet", "箱"])
def test_units_of_the_table_are_not_flagged(unit):
    assert _validated_flags(unit) == []


def test_an_unknown_unit_is_flagged_with_the_nearest_known_units():
    [flag] = _validated_flags("boxx")
    assert flag["code"] == "ambiguous_unit"
    assert "Nearest known units: box (BX)" in flag["message"]


def test_an_ambiguous_unit_is_still_flagged():
    [flag] = _validated_flags("ME")
    assert flag["code"] == "ambiguous_unit"


def test_published_items_keep_the_unit_as_written_and_its_code(workspace, settings, tmp_path):
    from catalog.models import CatalogItem
    from tests.catalog.test_parse_sheet import admit_sheet, run_until_idle

    settings.MEDIA_ROOT = tmp_path / "media"
    sheet = (
        "SKU,Description,Unit,Price,Currency\nA-1,Screws,Stück,1.50,EUR\nB-2,Cable,lfm,2.25,EUR\n"
    ).encode()
    admit_sheet(workspace, "units.csv", sheet)
    run_until_idle()

    items = {i.sku: (i.unit, i.unit_code) for i in CatalogItem.objects.all()}
    assert items == {"A-1": ("Stück", "H87"), "B-2": ("lfm", "LM")}
