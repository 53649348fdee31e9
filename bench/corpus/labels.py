"""Labels of the real corpus: loading, checking and the development/test split.

    python bench/corpus/labels.py            # check every label, print a summary

A label is structure only (see README.md beside this file); ``check`` refuses
anything that is not: unknown keys or roles, malformed ranges, free text past
a short note.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LABELS = HERE / "labels"
# ../shared/corpus beside the checkout (a worktree one level deeper looks one level up).
CORPUS = next(
    (
        c
        for c in (
            HERE.parents[1].parent / "shared" / "corpus",
            HERE.parents[1].parent.parent / "shared" / "corpus",
        )
        if c.is_dir()
    ),
    HERE.parents[1].parent / "shared" / "corpus",
)

ITEM_ROLES = ("sku", "description", "unit", "pack_size", "unit_price", "currency")
OTHER_ROLES = (
    "alt_price",
    "total",
    "quantity",
    "row_index",
    "barcode",
    "category",
    "brand",
    "stock",
    "date",
    "percent",
    "weight",
    "dimension",
    "url",
    "image",
    "note",
    "other",
)
ROLES = ITEM_ROLES + OTHER_ROLES
KINDS = ("item_list", "matrix", "rate_card", "statistics", "order_form", "other")
OUTCOMES = ("publish", "review", "refuse")
BASES = ("cell", "header", "title", "number_format", "column", "none")
MAX_NOTE = 200

_LETTERS = re.compile(r"^[A-Z]{1,3}$")
_RANGES = re.compile(r"^(\d+(-\d+)?)(,\d+(-\d+)?)*$")
_CELL_RANGE = re.compile(r"^[A-Z]{1,3}\d+:[A-Z]{1,3}\d+$")
_TOP_KEYS = {"file", "kind", "outcome", "outcome_why", "currency", "currency_basis", "sheets", "notes"}
_SHEET_KEYS = {"sheet", "header_rows", "columns", "item_rows", "review_rows", "group_rows", "matrix"}


def label_name(file: str) -> str:
    """The label's file name for a corpus path: ``dev/files/x.csv`` -> ``dev__files__x.csv.json``."""
    return file.replace("/", "__") + ".json"


def rows_of(ranges: str | None) -> list[int]:
    """``"4-6,9"`` -> ``[4, 5, 6, 9]``."""
    out: list[int] = []
    for part in (ranges or "").split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def split() -> dict[str, list[str]]:
    return json.loads((HERE / "split.json").read_text())


def load(file: str) -> dict | None:
    path = LABELS / label_name(file)
    return json.loads(path.read_text()) if path.exists() else None


def load_all(*folders: Path) -> dict[str, dict]:
    """Every label of ``folders`` (default: the project's own), by corpus path."""
    paths = sorted(p for folder in (folders or (LABELS,)) for p in Path(folder).glob("*.json"))
    return {(lab := json.loads(p.read_text()))["file"]: lab for p in paths}


def _check_ranges(where: str, value, problems: list[str]) -> None:
    if value in (None, ""):
        return
    if not isinstance(value, str) or not _RANGES.match(value):
        problems.append(f"{where}: ranges like '4-57,59' expected, got {value!r}")
        return
    for part in value.split(","):
        lo, _, hi = part.partition("-")
        if hi and int(hi) < int(lo):
            problems.append(f"{where}: range {part} runs backwards")


def _check_sheet(where: str, sheet: dict, problems: list[str]) -> None:
    for key in set(sheet) - _SHEET_KEYS:
        problems.append(f"{where}: unknown key {key!r}")
    if not isinstance(sheet.get("sheet"), int) or sheet["sheet"] < 0:
        problems.append(f"{where}: 'sheet' is the sheet's position from 0")
    headers = sheet.get("header_rows")
    if not isinstance(headers, list) or not all(isinstance(r, int) and r >= 1 for r in headers):
        problems.append(f"{where}: header_rows is a list of 1-based rows")
    columns = sheet.get("columns") or {}
    for letter, role in columns.items():
        if not _LETTERS.match(letter):
            problems.append(f"{where}: column {letter!r} is not a column letter")
        if role not in ROLES:
            problems.append(f"{where}: column {letter} has unknown role {role!r}")
    for role in ITEM_ROLES:
        if list(columns.values()).count(role) > 1:
            problems.append(f"{where}: role {role} given to more than one column")
    for key in ("item_rows", "review_rows", "group_rows"):
        _check_ranges(f"{where}.{key}", sheet.get(key), problems)
    items = set(rows_of(sheet.get("item_rows")))
    if not set(rows_of(sheet.get("review_rows"))) <= items:
        problems.append(f"{where}: review_rows must be item rows")
    if items & set(headers or []):
        problems.append(f"{where}: a header row is also an item row")
    matrix = sheet.get("matrix")
    if matrix is not None and not (isinstance(matrix, dict) and _CELL_RANGE.match(str(matrix.get("body")))):
        problems.append(
            f"{where}: matrix needs row_label_columns, column_header_rows and a body like 'B4:Z40'"
        )


def check(label: dict) -> list[str]:
    """What is wrong with one label (empty when it is well formed)."""
    problems: list[str] = []
    where = label.get("file", "?")
    for key in set(label) - _TOP_KEYS:
        problems.append(f"{where}: unknown key {key!r}")
    if not (CORPUS / where).exists() and CORPUS.exists():
        problems.append(f"{where}: no such corpus file")
    if label.get("kind") not in KINDS:
        problems.append(f"{where}: kind is one of {KINDS}")
    if label.get("outcome") not in OUTCOMES:
        problems.append(f"{where}: outcome is one of {OUTCOMES}")
    cur = label.get("currency")
    if cur is not None and not re.match(r"^[A-Z]{3}$", str(cur)):
        problems.append(f"{where}: currency is an ISO 4217 code or null")
    if label.get("currency_basis") not in BASES:
        problems.append(f"{where}: currency_basis is one of {BASES}")
    if (cur is None) != (label.get("currency_basis") == "none"):
        problems.append(f"{where}: currency null exactly when currency_basis is 'none'")
    for key in ("outcome_why", "notes"):
        if len(str(label.get(key) or "")) > MAX_NOTE:
            problems.append(f"{where}: {key} is a short structural note (at most {MAX_NOTE} characters)")
    for i, sheet in enumerate(label.get("sheets") or []):
        _check_sheet(f"{where} sheets[{i}]", sheet, problems)
    if label.get("kind") == "item_list" and not label.get("sheets"):
        problems.append(f"{where}: an item list names the sheets that hold its items")
    return problems


def main() -> int:
    labels = load_all()
    problems = [p for lab in labels.values() for p in check(lab)]
    parts = split()
    for name in ("development", "test"):
        have = sum(f in labels for f in parts[name])
        print(f"{name}: {have} of {len(parts[name])} labeled")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
