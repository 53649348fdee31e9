"""The rules' header words against the labeled development part (needs ../shared/corpus)."""

import pytest

from bench.corpus.labels import CORPUS, split

pytestmark = [
    pytest.mark.skipif(not (CORPUS / "dev").is_dir(), reason="corpus folder ../shared/corpus is absent"),
    pytest.mark.once,
]


def test_no_header_word_of_the_rules_is_contradicted_by_the_development_part():
    # A word whose development headers name another role more often than its list's,
    # in two files or more, points the rules at the wrong column: it has no place there.
    from bench.corpus.vocabulary import contradicted_words

    contradicted = {
        name: words for name, words in contradicted_words(split()["development"]).items() if words
    }
    assert contradicted == {}


def test_the_header_does_not_choose_between_several_columns_it_names_price():
    # rules_columns._doubts puts the price in doubt when the header names two money columns
    # price: on the development sheets that do, the strongest price word seldom stands over the
    # labeled price alone (tiers, currencies, with and without tax).
    from bench.corpus.vocabulary import several_prices

    several = several_prices(split()["development"])
    assert len({f for f, _sheet, _ok in several}) >= 2
    assert sum(ok for _f, _sheet, ok in several) < 0.5 * len(several)


def test_only_the_header_tells_whether_a_lone_column_of_codes_holds_skus_or_names():
    # columns._code_names puts such a column's role in doubt under a header that does not name
    # it: on the development part both roles occur, each on two files or more.
    from bench.corpus.vocabulary import code_names

    codes = code_names(split()["development"])
    for role in ("sku", "description"):
        assert len({f for f, _sheet, r in codes if r == role}) >= 2


def test_the_model_keeps_the_header_words_the_development_part_backs():
    # Only these lower the bar the model's agreement with the rules must reach
    # (columns.header_names); make train writes them into the model file.
    from bench.corpus.vocabulary import backed_vocabulary
    from catalog.extraction.column_model import load_model

    backed = {name: words for name, words in backed_vocabulary(split()["development"]).items() if words}
    assert dict(load_model().backed_words) == backed
