"""The extractor on the labeled corpus changed the ways unseen sheets differ.

    python bench/extraction_robustness.py [--change KIND ...] [--part PART ...] [--seed N] [-v]

Each change of bench/corpus/perturb.py (columns in another order, no header
row, only the first few items, no optional columns) is applied to every
labeled item list of the development and the test part; the changed sheets
are scored against their changed labels by bench/corpus/scoring.py, as a
parse job would read them. Per change and part: item-row F1, price,
description and SKU accuracy, item lists refused, and the two figures that
must stay 0 whatever the order or the size of a sheet: wrong values without
a flag on their field or their column, and rows taken as items without any
flag. The unchanged corpus is the first line of each part. Needs no
database; about a minute and a half per change and part on two cores.

``--out-of-fold K`` reads the development part at first sight instead: its
files are dealt at random (fixed seed) into K folds, and each fold is scored
with a column model and a sheet model fitted (``bench/corpus/train.py``,
``bench/corpus/train_sheets.py``) on the other folds only, as the test part
and unseen sheets are read. Fitting takes about two minutes per fold; the
fitted models are kept in the temporary folder, named by what they were
fitted on, and reused.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import random
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.corpus.labels import CORPUS, load_all, split  # noqa: E402
from bench.corpus.perturb import KINDS, perturbed  # noqa: E402
from bench.corpus.scoring import score_file, summarize  # noqa: E402
from catalog.errors import UnreadableSheet  # noqa: E402
from catalog.reading import read_table  # noqa: E402


def item_lists(part: str) -> list[tuple[dict, object]]:
    """(label, table) of every labeled item list of ``part`` that the project reads."""
    labels = load_all()
    out = []
    for f in split()[part]:
        label = labels.get(f)
        if label is None or label["kind"] != "item_list":
            continue
        try:
            out.append((label, read_table(CORPUS / f, filename=(CORPUS / f).name)))
        except UnreadableSheet:
            continue
    return out


FOLD_SEED = 20261203


def folds(files: list, k: int, seed: int = FOLD_SEED) -> list[list]:
    """``files`` dealt into ``k`` folds at random, the same every run for one ``seed``."""
    order = list(files)
    random.Random(seed).shuffle(order)
    return [order[i::k] for i in range(k)]


def _fitted(path: Path, fit) -> Path:
    """``path``, written by ``fit()`` (its printing kept quiet) unless a run wrote it before."""
    if not path.exists():
        with contextlib.redirect_stdout(io.StringIO()):
            model = fit()
        path.write_text(json.dumps(model), encoding="utf-8")
    return path


@contextlib.contextmanager
def model_without(held_out: set[str]):
    """The project's column and sheet models replaced, inside the block, by models fitted on the
    development part without the files ``held_out``."""
    from bench.corpus import train as fitting
    from bench.corpus import train_sheets as sheet_fitting
    from bench.corpus import vocabulary
    from catalog.extraction import column_model, sheet_model
    from catalog.readers import common as reading

    labels = load_all()
    files = [f for f in split()["development"] if f not in held_out]
    key = hashlib.sha256()
    key.update(json.dumps([labels.get(f) for f in files], sort_keys=True).encode())
    # What the model learns from: the fitting, the backed words, the readers, every part of the
    # extraction.
    sources = [Path(fitting.__file__), Path(sheet_fitting.__file__), Path(vocabulary.__file__)]
    sources.append(Path(reading.__file__))
    sources += sorted(Path(column_model.__file__).parent.glob("*.py"))
    for source in sources:
        key.update(source.read_bytes())
    path = Path(tempfile.gettempdir()) / f"pricesheet-fold-model-{key.hexdigest()[:16]}.json"
    sheets_path = path.with_name(path.stem.replace("-fold-model-", "-fold-sheet-model-") + ".json")
    project = column_model.MODEL_PATH, sheet_model.MODEL_PATH
    try:
        column_model.MODEL_PATH = _fitted(path, lambda: fitting.train(labels, files))
        column_model.load_model.cache_clear()
        # The sheet model reads the column model's probabilities: fitted after it, on the same files.
        sheet_model.MODEL_PATH = _fitted(sheets_path, lambda: sheet_fitting.train(labels, files))
        sheet_model.load_sheet_model.cache_clear()
        yield
    finally:
        column_model.MODEL_PATH, sheet_model.MODEL_PATH = project
        column_model.load_model.cache_clear()
        sheet_model.load_sheet_model.cache_clear()


def score_out_of_fold(
    kinds: list[str | None],
    files: list[tuple[dict, object]],
    k: int,
    seed: int = 0,
    fold_seed: int = FOLD_SEED,
) -> dict:
    """Each change's scores of ``files``, every fold read with a model fitted without it."""
    scores: dict[str | None, list] = {kind: [] for kind in kinds}
    for fold in folds(files, k, fold_seed):
        with model_without({label["file"] for label, _table in fold}):
            for kind in kinds:
                scores[kind] += score_change(kind, fold, seed)[1]
    return scores


def score_change(kind: str | None, files: list[tuple[dict, object]], seed: int = 0) -> tuple[dict, list]:
    """The summary of ``files`` with change ``kind`` (None: as they are), and each file's score."""
    scores = []
    for label, table in files:
        for one in kind.split("+") if kind else ():
            table, label = perturbed(one, table, label, seed)
        scores.append(score_file(label, table=table))
    return summarize(scores), scores


def line(name: str, m: dict) -> str:
    acc = m["accuracy"]
    return (
        f"  {name:>15s} {m['read']:>5d} {m['f1']:>6.3f} {acc['unit_price']:>6.3f} {acc['description']:>6.3f} "
        f"{acc['sku']:>6.3f} {len(m['lists_refused']):>8d} {m['unflagged_total']:>9d} {m['unflagged_rows_total']:>9d}"
    )


def _change_kind(text: str) -> str:
    if not all(one in KINDS for one in text.split("+")):
        raise argparse.ArgumentTypeError(f"{text!r}: each change is one of {', '.join(KINDS)}")
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--change",
        type=_change_kind,
        action="append",
        help=f"only these changes (default: all): {', '.join(KINDS)}, or several joined by + (permute+head20)",
    )
    parser.add_argument("--part", choices=("development", "test"), action="append", help="default: both")
    parser.add_argument("--seed", type=int, default=0, help="another random order for permute [0]")
    parser.add_argument("-v", "--verbose", action="store_true", help="name the files refused or unflagged")
    parser.add_argument(
        "--out-of-fold",
        type=int,
        metavar="K",
        help="the development part only, each of K folds read with a model fitted without it",
    )
    parser.add_argument(
        "--fold-seed", type=int, default=FOLD_SEED, help=f"another dealing of the folds [{FOLD_SEED}]"
    )
    args = parser.parse_args(argv)
    if not (CORPUS / "dev").is_dir():
        print(f"no corpus at {CORPUS}", file=sys.stderr)
        return 1
    kinds = [None, *(args.change or KINDS)]
    parts = ["development"] if args.out_of_fold else args.part or ("development", "test")
    for part in parts:
        files = item_lists(part)
        fitted = (
            score_out_of_fold(kinds, files, args.out_of_fold, args.seed, args.fold_seed)
            if args.out_of_fold
            else None
        )
        where = f", {args.out_of_fold} folds, each read with a model fitted without it" if fitted else ""
        print(f"\n== {part} part: {len(files)} labeled item lists{where}")
        print(
            f"  {'change':>15s} {'files':>5s} {'F1':>6s} {'price':>6s} {'descr':>6s} {'SKU':>6s} "
            f"{'refused':>8s} {'unflagged':>9s} {'bare rows':>9s}"
        )
        for kind in kinds:
            if fitted:
                scores = fitted[kind]
                m = summarize(scores)
            else:
                m, scores = score_change(kind, files, args.seed)
            print(line(kind or "as is", m))
            if args.verbose:
                for s in scores:
                    wrong, rows = sum(s.unflagged.values()), sum(s.unflagged_rows.values())
                    if s.outcome == "refuse" or wrong or rows:
                        print(
                            f"      {s.file}: {s.outcome}, {dict(s.unflagged)} {dict(s.unflagged_rows)} {s.reason or ''}"[
                                :220
                            ]
                        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
