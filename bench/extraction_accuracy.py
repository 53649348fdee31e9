"""Score the built-in extractor against hand-made ground truth.

    python bench/extraction_accuracy.py [--truth DIR] [--real DIR]

Scoring follows shared/corpus/README.md ("the honest way"), per file:
1. item rows: precision and recall, keyed by (sheet, row), inside the truth's
   covered rows;
2. per field on matched rows (sku, unit_price, currency, unit, pack_size): a
   value where truth has null is a false positive; prices compared as
   decimals, currency exactly, units through the synonym table, pack size by
   count;
3. unflagged guesses: a value filled in where truth has null on a review row,
   without a flag on that field (and, stricter, on any row);
4. flag recall over review rows and false flags on clean rows;
5. source support over every sheet in the real folder (needs no truth),
   plus a per-file outcome table.
Needs no database and no Django: it imports catalog.* from the repo root.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from decimal import Decimal, InvalidOperation
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from catalog.errors import SheetError  # noqa: E402
from catalog.extraction import extract_items, normalize_unit  # noqa: E402
from catalog.reading import CSV_SHEET_NAME, read_table  # noqa: E402
from catalog.validation import validate_items  # noqa: E402

FIELDS = ("sku", "unit_price", "currency", "unit", "pack_size")
DEFAULT_TRUTH = REPO.parent / "shared" / "corpus" / "truth"
DEFAULT_REAL = REPO.parent / "shared" / "corpus" / "real"


def run(path: Path):
    """(validated items, notes, error) for one file."""
    try:
        table = read_table(path, filename=path.name)
        extraction = extract_items(table)
    except SheetError as exc:
        return [], [], exc
    return validate_items(extraction.items, table), extraction.notes, None


def _dec(v):
    try:
        return Decimal(str(v))
    except (InvalidOperation, ValueError):
        return None


def _norm(field: str, value, truth_item: dict | None = None):
    if value in (None, ""):
        return None
    if field == "unit_price":
        return _dec(value)
    if field == "unit":
        if truth_item is not None and truth_item.get("unit_normalized"):
            return truth_item["unit_normalized"]
        return normalize_unit(value) or str(value).strip().casefold()
    if field == "pack_size":
        if isinstance(value, dict):
            value = value.get("count")
        return None if value is None else _dec(value)
    return str(value).strip()


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else "  n/a"


def _f1(p_num, p_den, r_num, r_den):
    if not p_den or not r_den:
        return None
    p, r = p_num / p_den, r_num / r_den
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def score_file(truth: dict, real_dir: Path) -> dict:
    path = real_dir / truth["file"]
    items, notes, error = run(path)
    scope = truth["scope"]
    sheet = scope.get("sheet") or CSV_SHEET_NAME
    lo, hi = scope["rows_covered"]
    mine = {
        (i["source"]["sheet"], i["source"]["row"]): i
        for i in items
        if i["source"]["sheet"] == sheet and lo <= i["source"]["row"] <= hi
    }
    want = {((t["source"]["sheet"] or CSV_SHEET_NAME), t["source"]["row"]): t for t in truth["items"]}
    review = {((r["sheet"] or CSV_SHEET_NAME), r["row"]) for r in truth.get("review_rows", [])}
    matched = set(mine) & set(want)
    s = {
        "file": truth["file"],
        "error": error.reason if error else None,
        "rows_tp": len(matched), "rows_mine": len(mine), "rows_truth": len(want),
        "fields": {f: collections.Counter() for f in FIELDS},
        "guesses_review": 0, "guesses_any": 0, "guess_detail": [],
        "review_rows": len(review), "review_flagged": 0,
        "clean_rows": 0, "false_flags": 0, "false_flag_detail": collections.Counter(),
    }
    for key in matched:
        m, t = mine[key], want[key]
        flagged_fields = {f["field"] for f in m.get("flags", [])}
        for f in FIELDS:
            mv = _norm(f, m.get(f))
            tv = _norm(f, t.get(f), t if f == "unit" else None)
            c = s["fields"][f]
            if mv is not None and tv is not None:
                if mv == tv:
                    c["tp"] += 1
                else:
                    c["fp"] += 1
                    c["fn"] += 1
            elif mv is not None:
                c["fp"] += 1
                if f not in flagged_fields:
                    s["guesses_any"] += 1
                    if key in review:
                        s["guesses_review"] += 1
                    s["guess_detail"].append((key[1], f, m.get(f)))
            elif tv is not None:
                c["fn"] += 1
    for key in review:
        if key in mine and mine[key].get("flags"):
            s["review_flagged"] += 1
    for key in set(want) - review:
        if key in mine:
            s["clean_rows"] += 1
            if mine[key].get("flags"):
                s["false_flags"] += 1
                for f in mine[key]["flags"]:
                    s["false_flag_detail"][f["code"]] += 1
    return s


def print_truth_report(scores: list[dict]) -> dict:
    total = collections.Counter()
    fields_total = {f: collections.Counter() for f in FIELDS}
    print("== Ground truth files (built-in extractor) ==")
    for s in scores:
        print(f"\n-- {s['file']}" + (f"  [error: {s['error']}]" if s["error"] else ""))
        print(f"   item rows: precision {_ratio(s['rows_tp'], s['rows_mine'])} ({s['rows_tp']}/{s['rows_mine']})"
              f"  recall {_ratio(s['rows_tp'], s['rows_truth'])} ({s['rows_tp']}/{s['rows_truth']})")
        for f in FIELDS:
            c = s["fields"][f]
            print(f"   {f:10s} precision {_ratio(c['tp'], c['tp'] + c['fp'])} ({c['tp']}/{c['tp'] + c['fp']})"
                  f"  recall {_ratio(c['tp'], c['tp'] + c['fn'])} ({c['tp']}/{c['tp'] + c['fn']})")
            fields_total[f].update(c)
        print(f"   unflagged guesses: {s['guesses_review']} on review rows, {s['guesses_any']} on any row"
              + (f"  {s['guess_detail'][:5]}" if s["guess_detail"] else ""))
        print(f"   flag recall over review rows: {_ratio(s['review_flagged'], s['review_rows'])}"
              f" ({s['review_flagged']}/{s['review_rows']})")
        print(f"   false flags on clean rows: {s['false_flags']}/{s['clean_rows']}"
              + (f"  {dict(s['false_flag_detail'])}" if s["false_flag_detail"] else ""))
        for k in ("rows_tp", "rows_mine", "rows_truth", "guesses_review", "guesses_any",
                  "review_rows", "review_flagged", "clean_rows", "false_flags"):
            total[k] += s[k]
    print("\n-- total over truth files")
    print(f"   item rows: precision {_ratio(total['rows_tp'], total['rows_mine'])}"
          f"  recall {_ratio(total['rows_tp'], total['rows_truth'])}"
          f"  F1 {_fmt(_f1(total['rows_tp'], total['rows_mine'], total['rows_tp'], total['rows_truth']))}")
    for f in FIELDS:
        c = fields_total[f]
        print(f"   {f:10s} precision {_ratio(c['tp'], c['tp'] + c['fp'])}  recall {_ratio(c['tp'], c['tp'] + c['fn'])}"
              f"  F1 {_fmt(_f1(c['tp'], c['tp'] + c['fp'], c['tp'], c['tp'] + c['fn']))}")
    print(f"   unflagged guesses: {total['guesses_review']} on review rows, {total['guesses_any']} on any row")
    print(f"   flag recall over review rows: {_ratio(total['review_flagged'], total['review_rows'])}"
          f" ({total['review_flagged']}/{total['review_rows']})")
    print(f"   false flags on clean rows: {total['false_flags']}/{total['clean_rows']}")
    return {"total": total, "fields": fields_total}


def _fmt(x):
    return "  n/a" if x is None else f"{x:.3f}"


def print_outcomes(real_dir: Path) -> None:
    print("\n== Outcome and source support on every real sheet ==")
    print(f"{'file':48s} {'outcome':>10s} {'flagged':>8s} {'support':>9s}  currencies / flags / reason")
    supported_total = items_total = 0
    for path in sorted(p for p in real_dir.iterdir() if p.is_file()):
        items, _notes, error = run(path)
        if error:
            print(f"{path.name:48s} {type(error).__name__:>10s} {'':>8s} {'':>9s}  {error.reason}")
            continue
        supported = sum(1 for i in items if not any(f["code"] == "unsupported_source" for f in i["flags"]))
        flagged = sum(1 for i in items if i["flags"])
        supported_total += supported
        items_total += len(items)
        currencies = collections.Counter(i["currency"] or "null" for i in items)
        codes = collections.Counter(f["code"] for i in items for f in i["flags"])
        print(f"{path.name:48s} {len(items):>5d} items {flagged:>8d} {_ratio(supported, len(items)):>9s}  "
              f"{dict(currencies)} {dict(codes)}")
    print(f"\nsource support over all items of all sheets: {_ratio(supported_total, items_total)}"
          f" ({supported_total}/{items_total})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--truth", type=Path, default=DEFAULT_TRUTH)
    parser.add_argument("--real", type=Path, default=DEFAULT_REAL)
    args = parser.parse_args(argv)
    if not args.real.is_dir():
        print(f"corpus folder {args.real} not found", file=sys.stderr)
        return 2
    scores = [
        score_file(json.loads(p.read_text(encoding="utf-8")), args.real)
        for p in sorted(args.truth.glob("*.json"))
    ] if args.truth.is_dir() else []
    if scores:
        print_truth_report(scores)
    print_outcomes(args.real)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
