"""The fitted sheet model: a sheet read as items is refused only when the model is sure it is none."""

import json

from catalog.extraction import extract
from catalog.extraction.extractor import KIND_NOT_LIST, MSG_MAYBE_NOT_LIST
from catalog.extraction.sheet_model import FEATURES, MODEL_PATH, load_sheet_model
from catalog.reading import Sheet, Table

TOWNS = ["Riga", "Tallinn", "Vilnius", "Kaunas", "Tartu", "Parnu", "Narva", "Liepaja"]
FUELS = ["Diesel", "Petrol 95", "Petrol 98", "LPG", "CNG", "Heating oil"]


def table(rows):
    return Table(sheets=[Sheet(name="Sheet1", rows=[list(r) for r in rows])])


def judged(rows):
    """(the extraction, the model's probability for each sheet it judged)."""
    seen = []
    got = extract(table(rows), observe=lambda _name, values: seen.append(values))
    return got, [load_sheet_model().probability(v) for v in seen]


def fuel_survey(first_header="Fuel"):
    """A fuel's price in each town, observed on a date: observations, not offers."""
    rows = [[first_header, *TOWNS, "Updated"]]
    for k, fuel in enumerate(FUELS):
        for i in range(2):
            prices = [f"1.{5 + k % 4}{j}" for j in range(len(TOWNS))]
            rows.append([fuel, *prices, f"2024-0{1 + (k * 5 + i) % 9}-1{i}"])
    return rows


def test_a_price_survey_by_fuel_and_town_is_refused_as_no_item_list():
    got, scores = judged(fuel_survey())
    (report,) = got.sheets
    assert got.refusal and not got.items
    assert report["status"] == "refused" and report["kind"] == KIND_NOT_LIST
    assert scores and report["confidence"] == round(scores[0], 3) >= load_sheet_model().threshold


def test_a_sheet_the_model_reads_as_no_item_list_more_likely_but_below_its_threshold_is_in_doubt():
    """Three towns' prices and no dates: the model leans to a survey without being sure of it."""
    rows = [row[:4] for row in fuel_survey()]
    got, (score,) = judged(rows)
    assert 0.5 < score < load_sheet_model().threshold
    assert got.refusal is None and got.needs_confirmation
    assert MSG_MAYBE_NOT_LIST.format(p=score) in got.sheets[0]["doubts"]
    # The first note, what a reviewer reads first.
    assert got.notes[0] == f"sheet 'Sheet1': {MSG_MAYBE_NOT_LIST.format(p=score)}"


def test_an_item_list_whose_header_names_no_role_is_judged_and_kept():
    rows = [["Was", "Kosten"]] + [[f"Schraube M{n} verzinkt {n * 5} mm", f"{n}.95"] for n in range(3, 30)]
    got, scores = judged(rows)
    assert scores and scores[0] < 0.5
    assert got.refusal is None and len(got.items) == 27
    assert not any("sheet model" in d for d in got.sheets[0]["doubts"])


def test_a_header_that_names_the_item_names_is_an_item_list_the_model_does_not_judge():
    got, scores = judged(fuel_survey(first_header="Description"))
    assert scores == []
    assert got.refusal is None and got.items


def test_the_threshold_lies_half_way_from_the_highest_out_of_fold_item_list_score():
    data = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    highest = data["highest_item_list_score"]
    assert data["threshold"] == round(highest + (1 - highest) / 2, 4) == load_sheet_model().threshold
    assert tuple(data["features"]) == FEATURES == load_sheet_model().features
    assert data["version"] and data["trained_on"]


def test_the_highest_out_of_fold_score_is_taken_over_every_dealing_of_the_folds():
    """One dealing of the files into folds is a draw: each example's score is its highest
    under all ``DEALINGS`` dealings, so the threshold stands above every draw's."""
    import random

    from bench.corpus.train_sheets import DEALINGS, SEED, highest_out_of_fold, out_of_fold

    draw = random.Random(5)
    rows = [
        (f"file{n}", "Sheet1", n % 2, {f: draw.random() + (n % 2) * 0.3 for f in FEATURES}) for n in range(40)
    ]
    dealt = [out_of_fold(rows, SEED + k) for k in range(DEALINGS)]
    assert DEALINGS > 1 and dealt[0] != dealt[1]
    assert highest_out_of_fold(rows) == [max(scores) for scores in zip(*dealt, strict=True)]


def parts_list():
    """An item list in words no dictionary knows: a running number, a name, a price, the
    stock on hand and the date the price was set."""
    rows = [["Zvrk", "Bdlmt", "Krtsg", "Sklvd", "Dtmr"]]
    for n in range(1, 41):
        name = f"Kondensator {n * 10} uF {16 + n % 4 * 9} V"
        rows.append([str(n), name, f"{n * 37 % 900 + 40}.{n * 7 % 100:02d}", str(n * 7 % 23), "2024-03-01"])
    return rows


def test_a_running_number_or_a_stock_count_beside_the_price_is_no_price_tier():
    """Numeric columns under words no dictionary knows count as price tiers (a rate card's) only
    when their values read as money: a row number or a stock count is no tier."""
    features = []
    got = extract(table(parts_list()), observe=lambda _name, values: features.append(values))
    assert features[0]["unnamed_numbers"] == 0.0
    assert load_sheet_model().probability(features[0]) < load_sheet_model().threshold
    assert got.refusal is None and len(got.items) == 40
