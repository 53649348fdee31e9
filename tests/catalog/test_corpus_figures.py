"""The labeled corpus guards the extractor's figures (needs ../shared/corpus).

The development part's figures may not drop below what the extractor
reaches today (bench/extraction_accuracy.py prints them), wrong values
without a flag on their field or their column stay at 0, and the column
model's words and thresholds come from the development part, not from hand.
"""

import json

import pytest

from bench.corpus.labels import CORPUS, load_all, split
from catalog.extraction.column_model import MODEL_PATH, header_tokens, load_model

pytestmark = [
    pytest.mark.skipif(not (CORPUS / "dev").is_dir(), reason="corpus folder ../shared/corpus is absent"),
    pytest.mark.once,
]

# What the development part reaches with the roles taken from the column model
# (python bench/extraction_accuracy.py --corpus-only --model).
FLOOR = {"f1": 0.925, "outcome_right": 80, "price": 0.59, "description": 0.97, "sku": 0.76}
MAX_LISTS_REFUSED = 2
# What bench/extraction_accuracy.py --corpus-only measured on the development part for
# extract()'s default (the rules alone left 117,607 wrong values without a flag): no wrong
# value without a flag on its field or its column.
# Lowered once, on purpose: rows under a header whose words name the columns are no longer taken
# for a matrix's column labels (25 kit sheets of one workbook, left out by its label, are now read
# as flagged items: F1 0.997 -> 0.995), and a sheet whose names the rules do not see is read with
# the model's name column instead of refused (one statistics table goes to review: 86 -> 85
# outcomes, 8 -> 9 non-item tables accepted). Lowered once more: a price per kilogram or litre is
# no longer taken for the price (formulas.per_measure; price 0.531 -> 0.689; 0.700 with header
# inflections), and on one sheet the
# rows with no regular price (special offers) are now skipped rows instead of items with the price
# per kilogram: F1 0.995 -> 0.9926. Descriptions lowered once, on purpose: with words joined into
# one token a column model feature (slugs and codes: SKUs on 9 of the 10 such labeled development
# columns), out of fold a column of slugs reads as the SKU, and SKUs rose 0.752 -> 0.779 (0.765 ->
# 0.793 with --model); on one sheet of 2,696 rows the description moved from one column the model
# gives 0.08 to another it gives 0.09 (both in doubt and flagged, the labeled one lost):
# descriptions 0.984 -> 0.963 (0.981 -> 0.956 with --model). Raised again when three capitals
# beside a number stopped being read as a currency unless they are a currency code ("WDC12" is
# a code, not 12) and the models were refitted: that sheet's descriptions are right again,
# 0.963 -> 0.984 (0.956 -> 0.980 with --model), and 6 of the 8 non-item tables accepted carry
# the doubt (4 before). Lowered to 5 when a whole part led by a zero ("0012") became a code and
# the models were refitted: a fuel-price table's sheet score fell from 0.52 to 0.49, under the
# 0.5 at which the doubt is shown. Raised to 6 when a matrix's row labels came from its first
# column that holds no numbers (layout._row_labels): a city-to-city fare table is no longer a
# matrix whose row labels are fares, and goes to review as an item list with the doubt. Price
# raised to 0.70 when a price under a header that names it stopped moving to a column whose
# header does not (columns._named_price_stays: 0.698 -> 0.703). Doubted raised to 7 when the
# sheet model counted only the numeric columns read as money among those under unknown words
# and was refitted with item lists that have a running number or a stock count added.
PARSED_FLOOR = {
    "f1": 0.992,
    "outcome_right": 86,
    "price": 0.70,
    "description": 0.98,
    "sku": 0.77,
    "max_unflagged": 0,
    "max_lists_refused": 0,
    "max_non_items_accepted": 8,
    # Of those, the ones whose doubts tell the reviewer the table may be no item list.
    "min_non_items_doubted": 7,
}


@pytest.fixture(scope="module")
def development_files():
    """(label, table) of every labeled development file, each read once for the three ways of
    extracting it below (a table is only read by extraction); an unreadable file's table is None,
    so scoring reads it again and records why it is unreadable."""
    from bench.corpus.scoring import read_table
    from catalog.errors import UnreadableSheet

    labels = load_all()
    files = []
    for f in split()["development"]:
        if f not in labels:
            continue
        try:
            table = read_table(CORPUS / f, filename=(CORPUS / f).name)
        except UnreadableSheet:
            table = None
        files.append((labels[f], table))
    return files


@pytest.fixture(scope="module")
def development(development_files):
    from bench.corpus.scoring import score_file, summarize

    return summarize(
        [score_file(label, column_model=True, table=table) for label, table in development_files]
    )


@pytest.fixture(scope="module")
def development_as_parsed(development_files):
    from bench.corpus.scoring import score_file, summarize

    return summarize([score_file(label, table=table) for label, table in development_files])


def test_what_a_parse_job_does_keeps_the_rules_figures_and_shows_the_models_doubt_on_reviewed_files(
    development_as_parsed,
):
    # extract()'s default: the rules' roles, the column model's doubt on every
    # file that goes to a reviewer anyway (a clean file still publishes).
    got = development_as_parsed
    assert got["f1"] >= PARSED_FLOOR["f1"]
    assert got["outcome_right"] >= PARSED_FLOOR["outcome_right"]
    assert got["unflagged_total"] <= PARSED_FLOOR["max_unflagged"], got["unflagged"]
    # A row that is no item (a group row, a total), or an item a reviewer must look at,
    # never reaches the catalog without a flag that points a reviewer at it.
    assert got["unflagged_rows_total"] == 0, got["unflagged_rows"]
    assert len(got["lists_refused"]) <= PARSED_FLOOR["max_lists_refused"], got["lists_refused"]
    assert len(got["non_items_accepted"]) <= PARSED_FLOOR["max_non_items_accepted"], got["non_items_accepted"]
    assert len(got["non_items_doubted"]) >= PARSED_FLOOR["min_non_items_doubted"], got["non_items_doubted"]


def test_what_a_parse_job_does_keeps_its_values_on_matched_rows(development_as_parsed):
    acc = development_as_parsed["accuracy"]
    assert acc["unit_price"] >= PARSED_FLOOR["price"]
    assert acc["description"] >= PARSED_FLOOR["description"]
    assert acc["sku"] >= PARSED_FLOOR["sku"]


def test_every_corpus_file_is_labeled():
    labels = load_all()
    assert set(split()["development"]) | set(split()["test"]) <= set(labels)


def test_development_part_has_no_wrong_value_without_a_flag_on_its_field_or_column(development):
    assert development["unflagged_total"] == 0, development["unflagged"]


def test_development_part_item_rows_do_not_drop(development):
    assert development["f1"] >= FLOOR["f1"]


def test_development_part_values_on_matched_rows_do_not_drop(development):
    acc = development["accuracy"]
    assert acc["unit_price"] >= FLOOR["price"]
    assert acc["description"] >= FLOOR["description"]
    assert acc["sku"] >= FLOOR["sku"]


def test_development_part_outcomes_do_not_drop(development):
    assert development["outcome_right"] >= FLOOR["outcome_right"]
    assert len(development["lists_refused"]) <= MAX_LISTS_REFUSED, development["lists_refused"]


def test_every_header_word_of_the_model_appears_under_one_role_in_two_development_files(development_files):
    from bench.corpus.train import MIN_WORD_FILES, examples

    tables = {label["file"]: table for label, table in development_files if table is not None}
    files: dict[tuple[str, str], set[str]] = {}
    for file, role, _values, header, *_where in examples(load_all(), split()["development"], tables):
        for token in header_tokens(header):
            files.setdefault((role, token), set()).add(file)
    backed = {token for (_role, token), fs in files.items() if len(fs) >= MIN_WORD_FILES}
    assert set(load_model().vocabulary) <= backed


def test_the_column_thresholds_come_from_the_model_file():
    data = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    model = load_model()
    assert (model.threshold, model.margin, model.absent_floor) == (
        data["threshold"],
        data["margin"],
        data["absent_floor"],
    )
    assert (model.agree_threshold, model.agree_named_threshold) == (
        data["agree_threshold"],
        data["agree_named_threshold"],
    )
    assert dict(model.rules_absent_floor) == data["rules_absent_floor"]
    assert data["trained_on"] and data["version"]


def test_the_column_modules_hold_no_header_words_only_role_names():
    import catalog.extraction.column_model as column_model
    import catalog.extraction.columns as columns
    from bench.corpus.labels import ROLES

    import catalog.extraction.money as money  # the currency codes table is the product's, not header words

    words = [
        name
        for module in (columns, column_model)
        for name, value in vars(module).items()
        if isinstance(value, (tuple, list, set, frozenset))
        and name.isupper()
        and name not in vars(money)
        and any(isinstance(v, str) and v not in ROLES for v in value)
    ]
    assert words == []
