"""The rules' roles with the column model's doubt on every file, on the labeled development part
(its own module, so that it runs beside tests/catalog/test_corpus_figures.py)."""

import pytest

from bench.corpus.labels import CORPUS, load_all, split

pytestmark = [
    pytest.mark.skipif(not (CORPUS / "dev").is_dir(), reason="corpus folder ../shared/corpus is absent"),
    pytest.mark.once,
]

# The rules' roles with the column model's doubt on every file (extract(..., model_doubt=True)) on the
# development part: the rules' item rows, and no wrong value unflagged.
HYBRID_FLOOR = {"f1": 0.996, "outcome_right": 84, "max_unflagged": 0}


@pytest.fixture(scope="module")
def development_with_model_doubt():
    from bench.corpus.scoring import score_file, summarize

    labels = load_all()
    return summarize(
        [
            score_file(labels[f], column_model=False, model_doubt=True)
            for f in split()["development"]
            if f in labels
        ]
    )


def test_model_doubt_keeps_the_rules_item_rows_and_outcomes_and_flags_their_doubtful_columns(
    development_with_model_doubt,
):
    got = development_with_model_doubt
    assert got["f1"] >= HYBRID_FLOOR["f1"]
    assert got["outcome_right"] >= HYBRID_FLOOR["outcome_right"]
    assert got["unflagged_total"] <= HYBRID_FLOOR["max_unflagged"], got["unflagged"]
    assert got["unflagged"]["unit_price"] == got["unflagged"]["description"] == 0
