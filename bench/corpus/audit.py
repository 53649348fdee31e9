"""Consistency of the labels with their files: what a second reader would question.

    python bench/corpus/audit.py [FILE ...]

For each labeled sheet: rows and columns that exist, item rows with a price
and a name (or listed for review), rows left out that look like items,
columns with values that have no role. Prints one line per doubt; a doubt
is a place to look, not a verdict.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from labels import CORPUS, ITEM_ROLES, load_all, rows_of  # noqa: E402
from show import sheets_of  # noqa: E402

_NUMBER = re.compile(r"\d")


def col_index(letter: str) -> int:
    n = 0
    for ch in letter:
        n = n * 26 + ord(ch) - 64
    return n - 1


def _cell(rows: list[list[str]], r: int, c: int) -> str:
    if 1 <= r <= len(rows) and c < len(rows[r - 1]):
        return (rows[r - 1][c] or "").strip()
    return ""


def audit_sheet(file: str, sheet: dict, rows: list[list[str]]) -> list[str]:
    out = []
    where = f"{file} sheet {sheet['sheet']}"
    roles = {role: letter for letter, role in (sheet.get("columns") or {}).items()}
    items = rows_of(sheet.get("item_rows"))
    review = set(rows_of(sheet.get("review_rows")))
    groups = set(rows_of(sheet.get("group_rows")))
    if items and max(items) > len(rows):
        out.append(f"{where}: item rows reach {max(items)}, the sheet has {len(rows)} rows")
    price = roles.get("unit_price")
    name = roles.get("description") or roles.get("sku")
    if items and not sheet.get("matrix"):
        if price is None:
            out.append(f"{where}: item rows but no unit_price column")
        if name is None:
            out.append(f"{where}: item rows but neither description nor sku column")
    no_price = [
        r for r in items if price and not _NUMBER.search(_cell(rows, r, col_index(price))) and r not in review
    ]
    if no_price:
        out.append(
            f"{where}: {len(no_price)} item rows without a number in the price column and not for review, e.g. {no_price[:5]}"
        )
    no_name = [r for r in items if name and not _cell(rows, r, col_index(name))]
    if no_name:
        out.append(
            f"{where}: {len(no_name)} item rows with an empty {'description' if roles.get('description') else 'sku'}, e.g. {no_name[:5]}"
        )
    if price and name and items:
        lo, hi = min(items), max(items)
        missed = [
            r
            for r in range(lo, hi + 1)
            if r not in items
            and r not in groups
            and _NUMBER.search(_cell(rows, r, col_index(price)))
            and _cell(rows, r, col_index(name))
        ]
        if missed:
            out.append(
                f"{where}: {len(missed)} rows inside the item range with a name and a number in the price column but not items, e.g. {missed[:5]}"
            )
    used = set()
    for r in items[:2000]:
        used.update(c for c, v in enumerate(rows[r - 1] if r <= len(rows) else []) if v.strip())
    labelled = {col_index(letter) for letter in (sheet.get("columns") or {})}
    unnamed = sorted(used - labelled)
    if unnamed and not sheet.get("matrix"):
        out.append(f"{where}: columns with values in item rows but no role: {unnamed[:8]}")
    for h in sheet.get("header_rows") or []:
        for role in ITEM_ROLES:
            letter = roles.get(role)
            if letter and role in ("unit_price", "description") and not _cell(rows, h, col_index(letter)):
                out.append(f"{where}: header row {h} is empty in the {role} column {letter}")
    return out


def main(argv: list[str]) -> int:
    labels = load_all()
    names = argv or sorted(labels)
    doubts = 0
    for file in names:
        label = labels[file]
        try:
            sheets = sheets_of(CORPUS / file)
        except Exception as exc:  # noqa: BLE001 - one unreadable file is reported, the rest go on
            print(f"{file}: unreadable here ({exc.__class__.__name__})")
            continue
        for sheet in label.get("sheets") or []:
            if sheet["sheet"] >= len(sheets):
                print(f"{file}: sheet {sheet['sheet']} does not exist ({len(sheets)} sheets)")
                continue
            for line in audit_sheet(file, sheet, sheets[sheet["sheet"]][1]):
                doubts += 1
                print(line)
    print(f"{doubts} doubts over {len(names)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
