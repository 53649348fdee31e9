"""Print a pre-filled label for a corpus file, from the extractor, for a person to correct.

    python bench/corpus/prefill.py dev/files/NAME.csv > bench/corpus/labels/dev__files__NAME.csv.json

Header rows, every column's role (the model's most likely one, item role or
not), the item rows, the currency when every item states the same one, and
the outcome the product reaches. Structure only: no cell text is printed.
Columns the model holds in doubt are named in ``notes``; check them first.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.corpus.labels import CORPUS, ROLES, check  # noqa: E402
from bench.corpus.scoring import run_file  # noqa: E402
from catalog.flags import Code  # noqa: E402


def ranges(rows: list[int]) -> str:
    """``[4, 5, 6, 9]`` -> ``"4-6,9"``."""
    out, start, prev = [], None, None
    for r in sorted(set(rows)):
        if prev is not None and r == prev + 1:
            prev = r
            continue
        if start is not None:
            out.append(f"{start}-{prev}" if prev != start else str(start))
        start = prev = r
    if start is not None:
        out.append(f"{start}-{prev}" if prev != start else str(start))
    return ",".join(out)


def _sheet_label(position: int, report: dict, items: list[dict]) -> dict:
    columns = {}
    for c in report["columns"]:
        role = c["role"] if c["role"] != "other" else c.get("kind", "other")
        columns[c["column"]] = role if role in ROLES else "other"
    rows = [i["source"]["row"] for i in items if i["source"]["sheet"] == report["sheet"]]
    review = [
        i["source"]["row"]
        for i in items
        if i["source"]["sheet"] == report["sheet"]
        and any(f["code"] in (Code.INVALID_PRICE, Code.PRICE_WITHOUT_ITEM) for f in i.get("flags") or [])
    ]
    return {
        "sheet": position,
        "header_rows": report.get("header_rows") or [],
        "columns": columns,
        "item_rows": ranges(rows),
        "review_rows": ranges(review),
        "group_rows": "",
        "matrix": None,
    }


def prefill(file: str) -> dict:
    table, result, items, outcome = run_file(CORPUS / file)
    names = [s.name for s in table.sheets]
    sheets = [_sheet_label(names.index(r["sheet"]), r, items) for r in result.sheets if r["status"] == "read"]
    currencies = {i.get("currency") for i in items}
    currency = next(iter(currencies)) if len(currencies) == 1 else None
    doubted = [
        f"{r['sheet']}!{c['column']}"
        for r in result.sheets
        for c in r.get("columns") or []
        if c.get("needs_confirmation")
    ]
    return {
        "file": file,
        "kind": "item_list" if sheets else "other",
        "outcome": outcome,
        "outcome_why": "pre-filled by the extractor: check every field",
        "currency": currency,
        "currency_basis": "cell" if currency else "none",
        "sheets": sheets,
        "notes": ("columns in doubt: " + ", ".join(doubted))[:200] if doubted else "",
    }


def main(argv=None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 1:
        print(__doc__)
        return 2
    label = prefill(args[0])
    print(json.dumps(label, ensure_ascii=False, indent=2))
    for problem in check(label):
        print(problem, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
