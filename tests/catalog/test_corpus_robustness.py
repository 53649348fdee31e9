"""The development part's item lists, changed the ways unseen sheets differ, keep every wrong
value flagged (needs ../shared/corpus; bench/extraction_robustness.py prints every change).

Columns in another order, the same with only the first 20 items, a sheet without its header row
with its columns reversed, a header in words no vocabulary knows with the columns reversed, a
letterhead, section headings and a header one column off its values at once, and a header one
column off with the columns in another order (a code word over a column of sizes), and a
header in words no vocabulary knows with a column of running numbers or of stock counts added,
a total and a note after the items, and amounts written with a decimal comma and dots between
thousands are the changes checked here: none may leave a wrong value without a flag on its field or its column,
nor a row taken as an item without any flag, nor refuse more item lists than today.
"""

import pytest

from bench.corpus.labels import CORPUS

pytestmark = [
    pytest.mark.skipif(not (CORPUS / "dev").is_dir(), reason="corpus folder ../shared/corpus is absent"),
    pytest.mark.once,
]

# What bench/extraction_robustness.py --part development measured: item lists refused per change.
MAX_REFUSED = {
    "permute": 0,
    "permute+head20": 0,
    "reverse+noheader": 1,
    "foreign+reverse": 1,
    "title+sections+shift": 0,
    "shift+permute": 2,
    "foreign+numbered": 0,
    "foreign+stock": 0,
    "footer": 0,
    "comma": 0,
}


@pytest.fixture(scope="module")
def development_item_lists():
    from bench.extraction_robustness import item_lists

    return item_lists("development")


@pytest.mark.parametrize("change", sorted(MAX_REFUSED))
def test_a_changed_sheet_leaves_no_wrong_value_without_a_flag(development_item_lists, change):
    from bench.extraction_robustness import score_change

    got, _scores = score_change(change, development_item_lists)
    assert got["read"] == len(development_item_lists)
    assert got["unflagged_total"] == 0, dict(got["unflagged"])
    assert got["unflagged_rows_total"] == 0, dict(got["unflagged_rows"])
    assert len(got["lists_refused"]) <= MAX_REFUSED[change], got["lists_refused"]


def test_out_of_fold_deals_every_file_once_the_same_way_each_run():
    from bench.extraction_robustness import folds

    files = [f"file{n}" for n in range(23)]
    dealt = folds(files, 5)
    assert len(dealt) == 5 and all(len(fold) in (4, 5) for fold in dealt)
    assert sorted(f for fold in dealt for f in fold) == sorted(files)
    assert dealt == folds(files, 5)
    assert dealt != folds(files, 5, seed=7)
