"""The extractor scored against the labeled corpus (structure labels, values read from the files).

Used by ``bench/extraction_accuracy.py`` (prints the figures) and by
``tests/catalog/test_corpus_figures.py`` (guards them). Per labeled file: read
it with the project's reader (a file it cannot read yet is counted as
unreadable), extract and validate it the way a parse job does, and compare:

- item rows (precision, recall), keyed by (sheet position, row);
- on matched rows, the price, the description (difflib ratio >= 0.8, no
  containment rule) and the SKU against the cell text of the labeled column
  (a price its column leaves to a guess, "15.000" where no cell shows the
  decimal sign, is never counted right: only a flag covers it);
- the outcome (publish, review, refuse) against the label's;
- wrong values without a flag on their field or a ``needs_confirmation`` on
  the column they were taken from: the figure that must be 0;
- rows taken as items that are not items (a group row, a total, a note), and
  item rows a reviewer must look at (no price, on request, a range), that
  carry no flag at all: a reviewer is pointed at none of them, so this
  figure must be 0 too.
"""

from __future__ import annotations

import collections
import difflib
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from itertools import pairwise
from pathlib import Path

from bench.corpus.labels import CORPUS, rows_of
from catalog.errors import UnreadableSheet
from catalog.extraction import col_index, col_letter, parse_decimal
from catalog.extraction.extractor import MSG_BANDS_TOO, MSG_MAYBE_NOT_LIST
from catalog.extraction.money import ISO_CODES, decimal_style, detect_currency, other_reading
from catalog.reading import read_table

NON_ITEM_KINDS = ("rate_card", "statistics", "other", "order_form")
# How a sheet's doubts say it may be no item list (what precedes each message's first field).
NOT_LIST_DOUBTS = tuple(msg.split("{")[0] for msg in (MSG_MAYBE_NOT_LIST, MSG_BANDS_TOO))
FIELDS = ("sku", "description", "unit_price", "currency")
DESCRIPTION_RATIO = 0.8


@dataclass
class FileScore:
    file: str
    kind: str
    expected: str
    outcome: str = "unreadable"
    tp: int = 0
    mine: int = 0
    truth: int = 0
    right: collections.Counter = field(default_factory=collections.Counter)
    wrong: collections.Counter = field(default_factory=collections.Counter)  # wrong, flagged or not
    unflagged: collections.Counter = field(default_factory=collections.Counter)  # wrong with no flag
    # Rows taken as items without any flag: not an item at all, or a labeled review row.
    unflagged_rows: collections.Counter = field(default_factory=collections.Counter)
    examples: list = field(default_factory=list)
    reason: str | None = None
    not_list_doubt: bool = False  # a sheet's doubts say it may be no item list (a reviewer is told)


def _norm(text) -> str:
    return " ".join(str(text or "").split())


def description_same(got, want) -> bool:
    a, b = _norm(got).casefold(), _norm(want).casefold()
    if a == b:
        return True
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= DESCRIPTION_RATIO


def _price_same(got, want_text: str, decimal: str | None) -> bool:
    if decimal is None and other_reading(want_text):
        return False  # "15.000" in a column that shows no decimal sign: no reading is the truth
    want = parse_decimal(want_text, decimal)
    if want is None:
        return _norm(got) == _norm(want_text)
    try:
        return Decimal(str(got)) == want
    except InvalidOperation:
        return False


def _truth(row: list[str], letter: str | None) -> str:
    col = col_index(letter) if letter else None
    return row[col] if col is not None and col < len(row) else ""


def _column_doubts(report: dict) -> dict[str, bool]:
    """role -> whether the column the extractor took it from awaits confirmation."""
    return {c["role"]: bool(c.get("needs_confirmation")) for c in report.get("columns") or []}


def _row_currency(text: str) -> str | None:
    """The currency a labeled currency column states on one row (a sheet whose rows differ)."""
    text = text.strip()
    return detect_currency(text) or (text.upper() if text.upper() in ISO_CODES else None)


def _compare_item(
    item: dict, row: list[str], roles: dict[str, str], label: dict, decimal: str | None
) -> dict[str, bool]:
    """field -> right?, for one matched item."""
    out = {
        "sku": _norm(item.get("sku")) == _norm(_truth(row, roles.get("sku"))),
        "description": description_same(item.get("description"), _truth(row, roles.get("description"))),
        "unit_price": _price_same(item.get("unit_price"), _truth(row, roles.get("unit_price")), decimal),
    }
    currency = item.get("currency")
    out["currency"] = currency is None or currency == (
        _row_currency(_truth(row, roles.get("currency"))) or label.get("currency")
    )
    return out


def run_file(path: Path, column_model: bool = False, model_doubt: bool | None = None, table=None):
    """(table, Extraction, validated items, outcome) the way a parse job sees the file; `table`,
    when given, is the file already read (extraction only reads it)."""
    from catalog.extraction import extract, show_held_doubt
    from catalog.validation import needs_review, review_flags, validate_items

    if table is None:
        table = read_table(path, filename=path.name)
    result = extract(table, column_model=column_model, model_doubt=model_doubt)
    if result.refusal:
        return table, result, [], "refuse"
    items = validate_items(result.items, table)  # as catalog.pipeline does
    confirm = show_held_doubt(result.held, result.sheets, items, review=needs_review(review_flags(items)))
    items = review_flags(items)
    review = needs_review(items) or result.needs_confirmation or confirm
    return table, result, items, "review" if review else "publish"


def score_file(
    label: dict,
    corpus: Path = CORPUS,
    column_model: bool = False,
    model_doubt: bool | None = None,
    table=None,
) -> FileScore:
    s = FileScore(label["file"], label["kind"], label["outcome"])
    try:
        table, result, items, s.outcome = run_file(corpus / label["file"], column_model, model_doubt, table)
    except UnreadableSheet as exc:
        s.reason = str(exc)
        return s
    s.reason = result.refusal
    s.not_list_doubt = any(
        d.startswith(NOT_LIST_DOUBTS) for report in result.sheets for d in report.get("doubts") or []
    )
    if label["kind"] != "item_list":
        return s
    names = [sh.name for sh in table.sheets]
    reports = {r["sheet"]: r for r in result.sheets}
    by_sheet: dict[str, dict[int, dict]] = collections.defaultdict(dict)
    for item in items:
        by_sheet[item["source"]["sheet"]][item["source"]["row"]] = item
    s.mine = len(items)
    for lab in label["sheets"]:
        if lab["sheet"] >= len(names):
            s.truth += len(rows_of(lab.get("item_rows")))
            continue
        sheet = table.sheets[lab["sheet"]]
        truth_rows = rows_of(lab.get("item_rows"))
        s.truth += len(truth_rows)
        roles = {role: letter for letter, role in (lab.get("columns") or {}).items()}
        price_col = col_index(roles["unit_price"]) if roles.get("unit_price") else None
        decimal = decimal_style(
            r[price_col] for r in sheet.rows[:2000] if price_col is not None and price_col < len(r)
        )
        doubted = _column_doubts(reports.get(sheet.name, {}))
        mine = by_sheet.get(sheet.name, {})
        items_here, review_here = set(truth_rows), set(rows_of(lab.get("review_rows")))
        for r, item in mine.items():
            if not item.get("flags") and (r not in items_here or r in review_here):
                s.unflagged_rows["not an item" if r not in items_here else "review row"] += 1
                if len(s.examples) < 5:
                    s.examples.append((sheet.name, r, "row"))
        for r in truth_rows:
            item = mine.get(r)
            if item is None or r > len(sheet.rows):
                continue
            s.tp += 1
            flagged = {f.get("field") for f in item.get("flags") or []}
            for name, ok in _compare_item(item, sheet.rows[r - 1], roles, label, decimal).items():
                if ok:
                    s.right[name] += 1
                    continue
                s.wrong[name] += 1
                if name not in flagged and not doubted.get(name):
                    s.unflagged[name] += 1
                    if len(s.examples) < 5:
                        s.examples.append((sheet.name, r, name))
    return s


def summarize(scores: list[FileScore]) -> dict:
    read = [s for s in scores if s.outcome != "unreadable"]
    t = collections.Counter()
    for s in read:
        t["tp"] += s.tp
        t["mine"] += s.mine
        t["truth"] += s.truth
    p = t["tp"] / t["mine"] if t["mine"] else 0.0
    r = t["tp"] / t["truth"] if t["truth"] else 0.0
    confusion = collections.Counter((s.expected, s.outcome) for s in read)
    right = collections.Counter()
    unflagged = collections.Counter()
    unflagged_rows = collections.Counter()
    for s in read:
        right.update(s.right)
        unflagged.update(s.unflagged)
        unflagged_rows.update(s.unflagged_rows)
    return {
        "files": len(scores),
        "read": len(read),
        "unreadable": len(scores) - len(read),
        "precision": p,
        "recall": r,
        "f1": 2 * p * r / (p + r) if p + r else 0.0,
        "tp": t["tp"],
        "truth": t["truth"],
        "mine": t["mine"],
        "accuracy": {f: right[f] / t["tp"] if t["tp"] else 0.0 for f in FIELDS},
        "outcome_right": sum(1 for s in read if s.expected == s.outcome),
        "confusion": confusion,
        "lists_refused": [s.file for s in read if s.kind == "item_list" and s.outcome == "refuse"],
        "non_items": sum(1 for s in read if s.kind in NON_ITEM_KINDS),
        "non_items_accepted": [s.file for s in read if s.kind in NON_ITEM_KINDS and s.outcome != "refuse"],
        "non_items_doubted": [
            s.file for s in read if s.kind in NON_ITEM_KINDS and s.outcome != "refuse" and s.not_list_doubt
        ],
        "lists_doubted": [s.file for s in read if s.kind == "item_list" and s.not_list_doubt],
        "lists": sum(1 for s in read if s.kind == "item_list"),
        "unflagged": unflagged,
        "unflagged_total": sum(unflagged.values()),
        "unflagged_rows": unflagged_rows,
        "unflagged_rows_total": sum(unflagged_rows.values()),
    }


def print_summary(name: str, scores: list[FileScore], verbose: bool = False) -> dict:
    m = summarize(scores)
    print(
        f"\n== {name}: {m['files']} labeled files, {m['read']} read, {m['unreadable']} unreadable (format not read yet)"
    )
    if verbose:
        for s in scores:
            mark = "" if s.outcome == s.expected else "  <- outcome"
            wrong, rows = sum(s.unflagged.values()), sum(s.unflagged_rows.values())
            print(
                f"  {s.file[:58]:58s} {s.kind[:10]:>10s} {s.expected:>8s} {s.outcome:>10s} "
                f"rows {s.tp:>5d}/{s.truth:<5d} extracted {s.mine:>5d} unflagged wrong {wrong:>4d} rows {rows:>3d}{mark}"
            )
    print(
        f"  item rows: precision {m['precision']:.3f}  recall {m['recall']:.3f}  F1 {m['f1']:.3f}  "
        f"({m['tp']} of {m['truth']} labeled rows, {m['mine']} extracted)"
    )
    acc = m["accuracy"]
    print(
        f"  on matched rows: price {acc['unit_price']:.3f}  description {acc['description']:.3f}  "
        f"SKU {acc['sku']:.3f}  currency {acc['currency']:.3f}"
    )
    print(
        f"  right outcome: {m['outcome_right']}/{m['read']}"
        + (f" ({m['outcome_right'] / m['read']:.0%})" if m["read"] else "")
    )
    outcomes = ("publish", "review", "refuse")
    print("    expected \\ got " + " ".join(f"{o:>8s}" for o in outcomes))
    for e in outcomes:
        print(f"    {e:>15s} " + " ".join(f"{m['confusion'][(e, o)]:>8d}" for o in outcomes))
    print(f"  ordinary item lists refused: {len(m['lists_refused'])}")
    print(
        f"  non-item tables accepted: {len(m['non_items_accepted'])} of {m['non_items']}; "
        f"{len(m['non_items_doubted'])} of those with a doubt that they may be no item list "
        f"(as on {len(m['lists_doubted'])} of {m['lists']} item lists)"
    )
    fields = ", ".join(f"{f} {m['unflagged'][f]}" for f in FIELDS)
    print(f"  WRONG VALUES WITHOUT A FLAG ON THEIR FIELD OR THEIR COLUMN: {m['unflagged_total']} ({fields})")
    rows = ", ".join(f"{k} {m['unflagged_rows'][k]}" for k in ("not an item", "review row"))
    print(
        f"  ROWS TAKEN AS ITEMS THAT ARE NOT ITEMS OR NEED REVIEW, WITHOUT ANY FLAG: {m['unflagged_rows_total']} ({rows})"
    )
    return m


def calibration(labels: dict[str, dict], files: list[str]) -> dict:
    """The column model on the labeled columns of ``files``: (confidence, right?) per column's most
    likely role, and per item role the extractor takes (catalog.extraction.columns.choose_columns)."""
    from bench.corpus.train import _choices, agreements, labeled_columns
    from catalog.extraction.column_model import load_model
    from catalog.extraction.column_model import value_vetoes as _vetoes
    from catalog.extraction.columns import _renormalized

    model = load_model()
    rows = [ex for f in files if f in labels for ex in labeled_columns(labels[f])]
    columns, probs = [], []
    for _f, role, values, header, *_where in rows:
        p = _renormalized(model.probabilities(values, header), _vetoes(values))
        best = max(p, key=p.get)
        columns.append((p[best], best == (role if role in model.roles else "other")))
        probs.append([p[r] for r in model.roles])
    taken = [(p, right) for p, _m, right, _present, was in _choices(rows, probs, list(model.roles)) if was]
    agreed = agreements(rows, probs, list(model.roles), labels, files)
    return {
        "columns": columns,
        "taken": taken,
        "threshold": model.threshold,
        "column_threshold": getattr(model, "column_threshold", None),
        "agreed": agreed,
        "agree_threshold": model.agree_threshold,
        "agree_named_threshold": model.agree_named_threshold,
    }


def print_calibration(name: str, cal: dict) -> None:
    from bench.corpus.train import agreement_rows

    edges = (0.0, 0.5, 0.8, 0.9, 0.95, 0.99, 1.0001)
    print(f"  calibration of the column model, {name} part:")
    print(f"    {'confidence':>12s} {'columns':>8s} {'right':>7s} {'roles taken':>12s} {'right':>7s}")
    for lo, hi in pairwise(edges):
        a = [r for p, r in cal["columns"] if lo <= p < hi]
        b = [r for p, r in cal["taken"] if lo <= p < hi]
        print(
            f"    {lo:>5.2f}-{min(hi, 1):<6.2f} {len(a):>8d} {(sum(a) / len(a) if a else 0):>7.3f} "
            f"{len(b):>12d} {(sum(b) / len(b) if b else 0):>7.3f}"
        )
    t = cal["threshold"]
    b = [r for p, r in cal["taken"] if p >= t]
    print(
        f"    roles taken with confidence >= the threshold {t}: {len(b)} of {len(cal['taken'])}, "
        + (f"{sum(b) / len(b):.3f} right" if b else "none (every role taken needs confirmation)")
    )
    print("  the rules' roles with the model's doubt (model_doubt): confident when the column model agrees")
    print("\n".join(agreement_rows(cal["agreed"], cal["agree_threshold"], cal["agree_named_threshold"])))


__all__ = [
    "FileScore",
    "calibration",
    "col_letter",
    "print_calibration",
    "print_summary",
    "run_file",
    "score_file",
    "summarize",
]
