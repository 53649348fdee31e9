"""Accuracy of the built-in extractor, per sheet and in total.

    python bench/extraction_accuracy.py [--truth DIR] [--real DIR] [--no-generated] [--corpus-only] [--part PART] [-v]

Sheets scored: the invented sheets of tests/catalog/sheetgen.py (generated
here, with their ground truth) and the hand-made ground truth of
../shared/corpus/truth/ (when present). Per sheet and in total:
- item rows: precision and recall (keyed by row, inside the truth's range);
- price, currency and description accuracy on the matched rows;
- the outcome (publish, review, refuse) against the expected one;
- unflagged wrong values per field (sku, description, unit_price, currency):
  a value that differs from the truth with no flag on its field or row and
  no column mapping waiting for confirmation, and items on rows that hold no
  item; the worst defect, so the number that matters most;
- rows dropped silently: truth item rows that are not items of a sheet that
  was not refused.
Then the outcome of every real sheet (no truth needed), and the labeled
corpus (bench/corpus/labels/, values read from ../shared/corpus/): the
development and the test part separately, scored by bench/corpus/scoring.py,
and the column model's calibration table. Needs no database.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from catalog.reading import CSV_SHEET_NAME, read_table  # noqa: E402
from tests.catalog import sheetgen  # noqa: E402

DEFAULT_TRUTH = REPO.parent / "shared" / "corpus" / "truth"
DEFAULT_REAL = REPO.parent / "shared" / "corpus" / "real"


def _truth_sheet(truth: dict, real_dir: Path) -> tuple[sheetgen.Generated, tuple[int, int]]:
    """A corpus truth file as a generated sheet: bytes, item rows, expected outcome."""
    path = real_dir / truth["file"]
    items = {
        t["source"]["row"]: {
            "sku": t.get("sku") or "",
            "description": t.get("description") or "",
            "unit_price": t["unit_price"],
            "currency": t.get("currency"),
        }
        for t in truth["items"]
    }
    review = truth.get("review_rows") or any(
        f.get("severity") == "review" for f in truth.get("file_flags") or []
    )
    gen = sheetgen.Generated(
        truth["file"],
        path.read_bytes(),
        "review" if review else "publish",
        sheet=truth["scope"].get("sheet") or CSV_SHEET_NAME,
        items=items,
    )
    return gen, tuple(truth["scope"]["rows_covered"])


def _review_in_scope(got: sheetgen.Outcome, sheet: str, lo: int, hi: int) -> bool:
    if any(s.get("needs_confirmation") for s in got.sheets if s["sheet"] == sheet):
        return True
    return any(
        i.get("flags") and i["source"]["sheet"] == sheet and lo <= i["source"]["row"] <= hi for i in got.items
    )


def score(name: str, gen: sheetgen.Generated, rows: tuple[int, int] | None = None) -> dict:
    got = sheetgen.run(gen)
    lo, hi = rows or (1, 10**9)
    mine = {
        i["source"]["row"]: i
        for i in got.items
        if i["source"]["sheet"] == gen.sheet and lo <= i["source"]["row"] <= hi
    }
    matched = set(mine) & set(gen.items)
    wrong = collections.Counter()
    for row, field, _value, _want in sheetgen.unflagged_wrong(gen, got):
        if lo <= row <= hi:
            wrong[field if row in gen.items else "row"] += 1
    outcome = got.outcome
    if (
        rows
        and outcome == "review"
        and gen.outcome == "publish"
        and not _review_in_scope(got, gen.sheet, lo, hi)
    ):
        outcome = "publish"  # only rows the truth does not cover wait for a reviewer
    return {
        "name": name,
        "expected": gen.outcome,
        "outcome": outcome,
        "tp": len(matched),
        "mine": len(mine),
        "truth": len(gen.items),
        "price": sum(
            sheetgen.same("unit_price", mine[r]["unit_price"], gen.items[r]["unit_price"]) for r in matched
        ),
        "currency": sum(
            sheetgen.same("currency", mine[r]["currency"], gen.items[r]["currency"]) for r in matched
        ),
        "description": sum(
            sheetgen.same("description", mine[r]["description"], gen.items[r]["description"]) for r in matched
        ),
        "wrong": wrong,
        "dropped": [r for r in sheetgen.silently_dropped(gen, got) if lo <= r <= hi],
        "reason": got.refusal,
    }


def _r(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else "  n/a"


def print_scores(scores: list[dict]) -> None:
    print(
        f"{'sheet':36s} {'expected':>8s} {'outcome':>8s} {'prec':>6s} {'recall':>6s} {'price':>6s} "
        f"{'curr':>6s} {'desc':>6s} {'unflagged wrong':>16s} {'dropped':>7s}"
    )
    for s in scores:
        mark = "" if s["outcome"] == s["expected"] else "  <- outcome"
        print(
            f"{s['name'][:36]:36s} {s['expected']:>8s} {s['outcome']:>8s} {_r(s['tp'], s['mine']):>6s} "
            f"{_r(s['tp'], s['truth']):>6s} {_r(s['price'], s['tp']):>6s} {_r(s['currency'], s['tp']):>6s} "
            f"{_r(s['description'], s['tp']):>6s} {sum(s['wrong'].values()):>16d} {len(s['dropped']):>7d}{mark}"
        )


def print_total(scores: list[dict]) -> None:
    t = collections.Counter()
    wrong = collections.Counter()
    for s in scores:
        for k in ("tp", "mine", "truth", "price", "currency", "description"):
            t[k] += s[k]
        wrong.update(s["wrong"])
        t["dropped"] += len(s["dropped"])
        t["right_outcome"] += s["outcome"] == s["expected"]
        t["needless_refusals"] += s["outcome"] == "refuse" and s["expected"] != "refuse"
    p, r = (t["tp"] / t["mine"] if t["mine"] else 0), (t["tp"] / t["truth"] if t["truth"] else 0)
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    print(f"\nTOTAL over {len(scores)} sheets")
    print(
        f"  item rows: precision {p:.3f}  recall {r:.3f}  F1 {f1:.3f}  ({t['tp']} of {t['truth']} truth rows, "
        f"{t['mine']} extracted)"
    )
    print(
        f"  price accuracy {_r(t['price'], t['tp'])}  currency accuracy {_r(t['currency'], t['tp'])}  "
        f"description accuracy {_r(t['description'], t['tp'])}"
    )
    print(
        f"  right outcome: {t['right_outcome']}/{len(scores)} ({t['right_outcome'] / len(scores):.0%}); "
        f"ordinary item lists refused: {t['needless_refusals']}"
    )
    fields = ", ".join(f"{f} {wrong[f]}" for f in (*sheetgen.FIELDS, "row"))
    print(f"  unflagged wrong values: {sum(wrong.values())} ({fields})")
    print(f"  rows dropped silently: {t['dropped']}")


def print_outcomes(real_dir: Path) -> None:
    from catalog.extraction import extract

    print("\n== Outcome of every real sheet (no truth needed) ==")
    for path in sorted(p for p in real_dir.iterdir() if p.is_file()):
        got = sheetgen.run(sheetgen.Generated(path.name, path.read_bytes(), ""))
        sheets = extract(read_table(path, filename=path.name)).sheets
        read = [s for s in sheets if s["status"] == "read"]
        refused = [s.get("kind", "") for s in sheets if s["status"] == "refused"]
        flagged = sum(1 for i in got.items if i.get("flags"))
        print(
            f"{path.name[:46]:46s} {got.outcome:>8s} {len(got.items):>6d} items {flagged:>6d} flagged  "
            f"{len(read)} sheet(s) read"
            + (f", refused: {', '.join(sorted(set(refused)))}" if refused else "")
        )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--truth", type=Path, default=DEFAULT_TRUTH)
    parser.add_argument("--real", type=Path, default=DEFAULT_REAL)
    parser.add_argument("--no-generated", action="store_true", help="skip the invented sheets")
    parser.add_argument("--corpus-only", action="store_true", help="only the labeled corpus")
    parser.add_argument(
        "--part",
        choices=("development", "test"),
        action="append",
        help="score only this part of the labeled corpus (default: both)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per labeled file")
    parser.add_argument(
        "--labels", type=Path, action="append", help="label folder(s); default bench/corpus/labels"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--rules",
        action="store_true",
        help="score the corpus with the hand-weighted column rules and no model doubt",
    )
    mode.add_argument(
        "--hybrid",
        action="store_true",
        help="score the corpus with the rules' roles and the column model's doubt on every "
        "file (extract(..., model_doubt=True))",
    )
    mode.add_argument(
        "--model",
        action="store_true",
        help="score the corpus with the roles taken from the column model (column_model=True)",
    )
    args = parser.parse_args(argv)
    # Without a flag: what a parse job does (the rules' roles, the model's doubt
    # on every file that goes to a reviewer anyway).
    model_doubt = False if args.rules else True if args.hybrid else None
    if args.corpus_only:
        print_corpus(args.verbose, args.labels, args.model, model_doubt, args.part)
        return 0
    scores = (
        [] if args.no_generated else [score(name, make()) for name, make in sorted(sheetgen.SHEETS.items())]
    )
    if args.truth.is_dir() and args.real.is_dir():
        for path in sorted(args.truth.glob("*.json")):
            gen, rows = _truth_sheet(json.loads(path.read_text(encoding="utf-8")), args.real)
            scores.append(score("corpus:" + gen.filename, gen, rows))
    print_scores(scores)
    print_total(scores)
    if args.real.is_dir():
        print_outcomes(args.real)
    print_corpus(args.verbose, args.labels, args.model, model_doubt, args.part)
    return 0


def print_corpus(
    verbose: bool,
    folders: list[Path] | None = None,
    column_model: bool = False,
    model_doubt: bool | None = None,
    parts: list[str] | None = None,
) -> None:
    from bench.corpus import labels as corpus_labels
    from bench.corpus.scoring import calibration, print_calibration, print_summary, score_file

    if not corpus_labels.CORPUS.is_dir():
        print("\n(no ../shared/corpus: the labeled corpus is not scored)")
        return
    labeled = corpus_labels.load_all(*(folders or ()))
    for part, files in corpus_labels.split().items():
        if part not in (parts or ("development", "test")):
            continue
        scores = [
            score_file(labeled[f], column_model=column_model, model_doubt=model_doubt)
            for f in files
            if f in labeled
        ]
        print_summary(
            f"labeled corpus, {part} part ({len(scores)} of {len(files)} files labeled)", scores, verbose
        )
        print_calibration(
            part
            + (
                " (in sample: the model was fitted on it; make train prints it out of fold)"
                if part == "development"
                else ""
            ),
            calibration(labeled, files),
        )


if __name__ == "__main__":
    raise SystemExit(main())
