"""Fit the sheet model on the labeled development part: ``make train`` (after the column model).

    python bench/corpus/train_sheets.py [--labels DIR ...] [--out catalog/extraction/sheet_model.json]

Every sheet of a readable development file that the extractor reads as items
and whose header names no item names is one example, with the features
``catalog.extraction.sheet_model.sheet_features`` gives it there (the
extractor hands them over through ``extract(..., observe=...)``): a labeled
item-list sheet of an item list is 0, and so is each of them as an unseen
sheet may come (``UNSEEN``: without its header, with header words no
dictionary knows, cut to its first 5 or 20 items, with a column of running
numbers or of stock counts added, with or without header words no
dictionary knows); every such sheet of a
rate card, a statistics table or another table that is no item list is 1.
Sheets of an item list that its label leaves out, product matrices and
order forms are not examples. A logistic regression (scikit-learn, every file weighing as
much as any other, both classes balanced) is fitted; out-of-fold scores
(folds by file, under ``DEALINGS`` dealings of the files into folds, each from
its own fixed seed) give the threshold: half way from the highest score an
item-list sheet got, under any dealing, to 1. One dealing alone is a draw:
over ten, the highest item-list score ranged from 0.86 to 0.91, and a
threshold from a low draw refused a development list cut to 5 items when
its fold was held out. Writes the model as JSON. Needs scikit-learn
(requirements-dev.txt).
"""

from __future__ import annotations

import collections
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.corpus.labels import CORPUS, split  # noqa: E402
from bench.corpus.perturb import perturbed  # noqa: E402
from bench.corpus.train import command, versioned  # noqa: E402
from catalog.errors import UnreadableSheet  # noqa: E402
from catalog.extraction.sheet_model import FEATURES, MODEL_PATH  # noqa: E402
from catalog.reading import read_table  # noqa: E402

SEED = 20261201
FOLDS = 5
DEALINGS = 10  # dealings of the files into folds: seeds SEED, SEED + 1, ...
C = 1.0
NOT_LISTS = ("rate_card", "statistics", "other")
# Item lists as an unseen sheet may come: without its header, with header words no dictionary
# knows, only its first few items, with a running number or a stock count beside the items, and
# both at once (``bench/corpus/perturb.py``; "+" joins changes). Each is an item list still.
UNSEEN = (
    "noheader",
    "foreign",
    "head5",
    "head20",
    "numbered",
    "stock",
    "foreign+numbered",
    "foreign+stock",
)


def _judged(table) -> list[tuple[str, dict]]:
    from catalog.extraction import extract

    seen: list[tuple[str, dict]] = []
    extract(table, observe=lambda name, values: seen.append((name, values)))
    return seen


def examples(labels: dict[str, dict], files: list[str]) -> list[tuple[str, str, int, dict]]:
    """(file, sheet name, 1 when the sheet is no item list, features) of every example sheet:
    each item list also as each change of ``UNSEEN`` leaves it."""
    out = []
    for f in files:
        label = labels.get(f)
        if label is None or label["kind"] not in ("item_list", *NOT_LISTS):
            continue
        try:
            table = read_table(CORPUS / f, filename=Path(f).name)
        except UnreadableSheet:
            continue
        names = [s.name for s in table.sheets]
        if label["kind"] != "item_list":
            out += [(f, name, 1, values) for name, values in _judged(table)]
            continue
        items = {lab["sheet"] for lab in label.get("sheets") or []}
        for change in (None, *UNSEEN):
            got, changed = table, label
            for kind in change.split("+") if change else ():
                got, changed = perturbed(kind, got, changed)
            out += [(f, name, 0, values) for name, values in _judged(got) if names.index(name) in items]
    return out


def _fit(x, y, w):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=C, class_weight="balanced", max_iter=5000).fit(x, y, sample_weight=w)


def out_of_fold(rows, seed: int = SEED) -> list[float]:
    """Every example's score by a model fitted without its file's fold, the files dealt into
    folds by ``seed``."""
    import numpy as np

    files = sorted({f for f, *_ in rows})
    random.Random(seed).shuffle(files)
    folds = [set(files[k::FOLDS]) for k in range(FOLDS)]
    x, y, w = _arrays(rows)
    scores = np.zeros(len(rows))
    for fold in folds:
        held = np.array([f in fold for f, *_ in rows])
        if held.any() and len(set(y[~held])) == 2:
            scores[held] = _fit(x[~held], y[~held], w[~held]).predict_proba(x[held])[:, 1]
    return [float(s) for s in scores]


def highest_out_of_fold(rows) -> list[float]:
    """Every example's highest out-of-fold score under the ``DEALINGS`` dealings."""
    dealt = [out_of_fold(rows, SEED + n) for n in range(DEALINGS)]
    return [max(scores) for scores in zip(*dealt, strict=True)]


def _arrays(rows):
    import numpy as np

    per_file = collections.Counter(f for f, *_ in rows)
    x = np.array([[values[k] for k in FEATURES] for *_r, values in rows])
    y = np.array([target for _f, _n, target, _v in rows])
    w = np.array([1 / per_file[f] for f, *_ in rows])
    return x, y, w


def train(labels: dict[str, dict], files: list[str] | None = None) -> dict:
    """The model, fitted on ``files`` (default: the development part)."""
    dev = files if files is not None else split()["development"]
    rows = examples(labels, dev)
    oof = highest_out_of_fold(rows)
    highest = round(max(s for s, (_f, _n, target, _v) in zip(oof, rows, strict=True) if target == 0), 4)
    threshold = round(highest + (1 - highest) / 2, 4)
    refused = sorted({f for s, (f, _n, t, _v) in zip(oof, rows, strict=True) if t == 1 and s >= threshold})
    non_lists = sorted({f for f, _n, t, _v in rows if t == 1})
    print(
        f"{len(rows)} sheets of {len({f for f, *_ in rows})} development files; "
        f"{sum(t for _f, _n, t, _v in rows)} of them no item list"
    )
    print(
        f"  out of fold, under {DEALINGS} dealings into {FOLDS} folds: highest item-list score "
        f"{highest:.3f}, threshold {threshold:.3f}"
    )
    print(
        f"  out of fold: {len(refused)} of {len(non_lists)} files that are no item list have a sheet above it "
        "under some dealing"
    )
    model = _fit(*_arrays(rows))
    content = {
        "trained_on": f"{len({f for f, *_ in rows})} development files, {len(rows)} sheets",
        "seed": SEED,
        "dealings": DEALINGS,
        "C": C,
        "features": list(FEATURES),
        "weights": [round(float(v), 5) for v in model.coef_[0]],
        "intercept": round(float(model.intercept_[0]), 5),
        "threshold": threshold,
        "highest_item_list_score": highest,
    }
    return versioned(content, [labels[f] for f in dev if f in labels])


def main(argv=None) -> int:
    return command(train, MODEL_PATH, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
