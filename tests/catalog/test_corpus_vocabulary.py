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
