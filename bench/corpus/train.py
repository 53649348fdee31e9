"""Fit the column model on the labeled development part: ``make train``.

    python bench/corpus/train.py [--labels DIR ...] [--out catalog/extraction/column_model.json]

Every labeled column of a readable development file is one example: its
features (``catalog.extraction.column_model.value_features``) over the body
below the labeled header, its header words, its labeled role. A header word
enters the vocabulary only when it appears under one role in at least two
development files; a role with fewer than ``MIN_ROLE_FILES`` files is
``other``. A multinomial logistic regression (scikit-learn, fixed seed) is
fitted; a temperature is fitted on out-of-fold predictions (folds by file),
and the confidence threshold is the lowest at which those predictions are
right at least ``TARGET`` of the time. The floors under which a role the
rules took no column for is absent are fitted on those predictions too, over
the development lists as they are and cut to their first 20 and 5 items
(``CUT``), and again on the development sheets with their header rows removed, in their own
column order and reversed (``HEADLESS``): the floors of a sheet whose header
says nothing. It keeps the rules' header words the development part backs
(``bench/corpus/vocabulary.py``): only a header in those words lowers the bar
the model's agreement with the rules must reach. Writes the model as JSON:
plain Python applies it at run time.
Needs scikit-learn (requirements-dev.txt).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import math
import sys
from itertools import pairwise
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.corpus.labels import CORPUS, load_all, split  # noqa: E402
from bench.corpus.vocabulary import backed_vocabulary  # noqa: E402
from catalog.errors import UnreadableSheet  # noqa: E402
from catalog.extraction.column_model import (  # noqa: E402
    MODEL_PATH,
    column_values,
    header_tokens,
    value_features,
    with_context,
)
from catalog.extraction.headers import compile_vocabulary  # noqa: E402
from catalog.extraction.layout import header_labels, table_start  # noqa: E402
from catalog.extraction.text import col_index  # noqa: E402
from catalog.reading import read_table  # noqa: E402

SEED = 20261201
MIN_WORD_FILES = 2  # a header word is learned only from two development files or more
MIN_ROLE_FILES = 3  # a role seen in fewer files is "other" to the model
# The roles the model tells apart: what an item is made of, and what must not be
# taken for it (another price, a total, a row number, a barcode, a percentage,
# a date, a link, a quantity to order). Every other labeled role is "other".
MODEL_ROLES = (
    "sku",
    "description",
    "unit",
    "pack_size",
    "unit_price",
    "currency",
    "alt_price",
    "total",
    "row_index",
    "barcode",
    "percent",
    "date",
    "url",
    "quantity",
)
TARGET = 0.995  # share right among roles given with confidence >= threshold
FOLDS = 5
C = 1.0


def labeled_columns(label: dict, corpus: Path = CORPUS, table=None):
    """(file, role, value features, header text) of every labeled column; unreadable files give none.
    `table`, when given, is the file already read."""
    if table is None:
        try:
            table = read_table(corpus / label["file"], filename=Path(label["file"]).name)
        except UnreadableSheet:
            return
    for lab in label.get("sheets") or []:
        if lab["sheet"] >= len(table.sheets):
            continue
        rows = table.sheets[lab["sheet"]].rows
        headers = lab.get("header_rows") or []
        body = rows[max(headers) :] if headers else rows[table_start(rows) :]  # as extraction reads it
        cols = [(col_index(letter), role) for letter, role in (lab.get("columns") or {}).items()]
        cols = sorted((c, r if r in MODEL_ROLES else "other") for c, r in cols if c is not None)
        width = max([len(r) for r in body[:2000]] + [c + 1 for c, _r in cols])
        feats = with_context([value_features(*column_values(body, c), c, width) for c, _r in cols])
        words = header_labels(rows, headers, table.sheets[lab["sheet"]].spans) if headers else []
        for (col, role), f in zip(cols, feats, strict=False):
            header = words[col] if col < len(words) else ""
            yield label["file"], role, f, header, (label["file"], lab["sheet"]), col


def rules_roles(label: dict, corpus: Path = CORPUS, table=None):
    """((file, sheet), role, column, in doubt?) of every role the hand rules (``rules_columns``) take
    on a labeled sheet; in doubt: the rules' own doubt (a close call, a header naming another column).
    `table`, when given, is the file already read (or changed)."""
    from catalog.extraction import rules_columns

    if table is None:
        try:
            table = read_table(corpus / label["file"], filename=Path(label["file"]).name)
        except UnreadableSheet:
            return
    for lab in label.get("sheets") or []:
        if lab["sheet"] >= len(table.sheets) or lab.get("matrix"):
            continue
        rows = table.sheets[lab["sheet"]].rows
        headers = lab.get("header_rows") or []
        body = rows[max(headers) :] if headers else rows[table_start(rows) :]  # as extraction reads it
        width = max([len(r) for r in body] + [len(rows[h - 1]) for h in headers if h <= len(rows)] + [1])
        words = header_labels(rows, headers, table.sheets[lab["sheet"]].spans) if headers else []
        labels = [words[c] if c < len(words) else "" for c in range(width)]
        got = rules_columns.assign_roles(rules_columns.profile_columns(body, width), labels)
        for role, col in got.roles.items():
            yield (label["file"], lab["sheet"]), role, col, role in got.doubted


def agreements(
    rows, probs, roles, labels: dict[str, dict], files: list[str], words=None
) -> list[tuple[float, bool, bool]]:
    """Per role the rules take on a labeled column: (how sure the model is of it, as
    ``columns.agreement`` reads it; right?; does the header name the role in backed words,
    ``words`` or the model's?). ``rows`` and ``probs`` are the labeled columns and their
    probabilities."""
    from catalog.extraction.columns import ITEM_ROLES, agreement, header_names

    index = {(where, col): n for n, (_f, _r, _v, _h, where, col) in enumerate(rows)}
    sheets = collections.defaultdict(dict)  # (file, sheet) -> column -> probabilities
    for n, (_f, _r, _v, _h, where, col) in enumerate(rows):
        sheets[where][col] = dict(zip(roles, probs[n], strict=True))
    out = []
    for f in files:
        for where, role, col, _doubted in rules_roles(labels[f]):
            n = index.get((where, col))
            if n is None or role not in ITEM_ROLES:
                continue
            cols = sheets[where]
            on_sheet = [cols.get(c) for c in range(max(cols) + 1)]
            out.append(
                (agreement(on_sheet, col, role), rows[n][1] == role, header_names(rows[n][3], role, words))
            )
    return out


def rules_absences(
    rows, probs, roles, labels: dict[str, dict], files: list[str], tables: dict | None = None
) -> list[tuple]:
    """Per item role the rules take no column for on a labeled sheet they read: (the model's best
    probability for it among the columns the rules left free, 0, the role, is the role labeled on one
    of them?, False), the shape ``_absent_floor`` reads, then the sheet (file, position) and the
    probability of the labeled free column itself (None when there is none), which
    ``_absent_floors`` prints. `tables`: files already read, by name."""
    from catalog.extraction.columns import ITEM_ROLES

    members = collections.defaultdict(dict)
    for n, (_f, role, _v, _h, where, col) in enumerate(rows):
        members[where][col] = (role, dict(zip(roles, probs[n], strict=True)))
    taken, doubted = collections.defaultdict(dict), collections.defaultdict(set)
    for f in files:
        for where, role, col, in_doubt in rules_roles(labels[f], table=(tables or {}).get(f)):
            taken[where][role] = col
            if in_doubt:
                doubted[where].add(col)
    out = []
    for where, got in taken.items():
        if "unit_price" not in got:
            continue
        # As in the extractor (columns._rules_absences): a column holding no item role (a quantity
        # column among them), or one whose role the rules doubt themselves.
        items = {c for r, c in got.items() if r in ITEM_ROLES} - doubted[where]
        free = [v for c, v in members.get(where, {}).items() if c not in items]
        for role in ITEM_ROLES:
            if role in got or not free:
                continue
            own = [p.get(role, 0.0) for r, p in free if r == role]
            best = max(p.get(role, 0.0) for _r, p in free)
            out.append((best, 0.0, role, bool(own), False, where, max(own) if own else None))
    return out


def _agree_threshold(pairs) -> float:
    """The lowest probability at which the roles both readings agree on are right at least TARGET of the time."""
    chosen, good = 1.0, 0
    for n, (p, right, *_named) in enumerate(sorted(pairs, reverse=True), start=1):
        good += right
        if p <= 0 or good / n < TARGET:
            break
        chosen = p
    return float(chosen)  # unrounded: the next, wrong, role may lie just below


def agreement_rows(pairs, threshold: float, named_threshold: float) -> list[str]:
    out = [f"    {'agreement':>12s} {'unnamed':>8s} {'right':>7s} {'named':>8s} {'right':>7s}"]
    edges = (0.0, 1e-9, 0.5, 0.8, 0.9, 0.95, 0.99, 1.0001)
    for lo, hi in pairwise(edges):
        cells = []
        for header in (False, True):
            sel = [r for p, r, named in pairs if lo <= p < hi and named == header]
            cells.append(f"{len(sel):>8d} " + (f"{sum(sel) / len(sel):>7.3f}" if sel else "    n/a"))
        name = "disagree" if hi <= 1e-9 else f"{lo:>5.2f}-{min(hi, 1):<6.2f}"
        out.append(f"    {name:>12s} " + " ".join(cells))
    sel = [r for p, r, named in pairs if p >= (named_threshold if named else threshold)]
    out.append(
        f"    confident (>= {threshold:.4f} unnamed, >= {named_threshold:.4f} named): {len(sel)} of {len(pairs)} roles "
        "the rules took, " + (f"{sum(sel) / len(sel):.3f} right" if sel else "none")
    )
    return out


def examples(labels: dict[str, dict], files: list[str], tables: dict | None = None) -> list[tuple]:
    """Every labeled column of `files`; `tables` may hold files already read, by name."""
    tables = tables or {}
    return [ex for f in files if f in labels for ex in labeled_columns(labels[f], table=tables.get(f))]


def _vocabulary(rows: list[tuple]) -> list[str]:
    files = collections.defaultdict(set)
    for file, role, _values, header, *_where in rows:
        for token in header_tokens(header):
            files[(role, token)].add(file)
    return sorted({token for (_role, token), fs in files.items() if len(fs) >= MIN_WORD_FILES})


def _roles(rows: list[tuple]) -> list[str]:
    files = collections.defaultdict(set)
    for file, role, _v, _h, *_where in rows:
        files[role].add(file)
    return sorted({r for r, fs in files.items() if len(fs) >= MIN_ROLE_FILES} | {"other"})


def _matrix(rows, features, vocabulary, means=None, scales=None):
    import numpy as np

    x = np.array([[v.get(f, 0.0) for f in features] for _f, _r, v, _h, *_w in rows], dtype=float)
    if means is None:
        means, scales = x.mean(axis=0), x.std(axis=0)
        scales[scales == 0] = 1.0
    index = {w: i for i, w in enumerate(vocabulary)}
    words = np.zeros((len(rows), len(vocabulary)))
    for n, (_f, _r, _v, header, *_w) in enumerate(rows):
        for token in header_tokens(header):
            if token in index:
                words[n, index[token]] = 1.0
    return np.hstack([(x - means) / scales, words]), means, scales


def _fit(x, y):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=C, max_iter=5000, random_state=SEED).fit(x, y)


def _softmax(logits, temperature):
    import numpy as np

    z = logits / temperature
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _out_of_fold(rows, roles, features, changed=()):
    """Logits of every development column from a model fitted without its file; and of the
    ``changed`` columns (the same files changed, ``bench/corpus/perturb.py``), each from the model
    fitted without the file it was changed from."""
    import numpy as np
    from sklearn.model_selection import GroupKFold

    groups = [f for f, *_rest in rows]
    y = np.array([roles.index(r if r in roles else "other") for _f, r, *_rest in rows])
    logits = np.zeros((len(rows), len(roles)))
    logits_changed = np.zeros((len(changed), len(roles)))
    for train, held in GroupKFold(n_splits=FOLDS).split(rows, y, groups):
        part = [rows[i] for i in train]
        vocab = _vocabulary(part)
        x, means, scales = _matrix(part, features, vocab)
        model = _fit(x, y[train])
        held_files = {groups[i] for i in held}
        for got, which in (
            (logits, list(held)),
            (logits_changed, [n for n, r in enumerate(changed) if r[0].split("#")[0] in held_files]),
        ):
            if not which:
                continue
            source = rows if got is logits else changed
            xh, _m, _s = _matrix([source[i] for i in which], features, vocab, means, scales)
            full = np.full((len(which), len(roles)), -1e9)
            full[:, model.classes_] = model.decision_function(xh)
            got[which] = full
    return logits, y, logits_changed


def _temperature(logits, y) -> float:
    import numpy as np

    best = (math.inf, 1.0)
    for t in np.arange(0.3, 4.01, 0.05):
        p = _softmax(logits, t)[np.arange(len(y)), y]
        best = min(best, (float(-np.log(np.clip(p, 1e-12, 1)).mean()), round(float(t), 2)))
    return best[1]


def _threshold(probs, y) -> float:
    """The lowest confidence above which every higher cut is right at least TARGET of the time."""
    import numpy as np

    conf, right = probs.max(axis=1), probs.argmax(axis=1) == y
    chosen = 0.999
    for t in np.round(np.arange(0.999, 0.49, -0.001), 3):
        sel = conf >= t
        if sel.sum() and right[sel].mean() < TARGET:
            break
        chosen = float(t)
    return chosen


def _vetoed(rows, probs, roles):
    """The probabilities after the run-time vetoes (catalog.extraction.columns)."""
    import numpy as np

    from catalog.extraction.column_model import value_vetoes as _vetoes
    from catalog.extraction.columns import _renormalized

    out = probs.copy()
    for n, (_f, _r, values, *_rest) in enumerate(rows):
        vetoed = _vetoes(values)
        if vetoed:
            got = _renormalized(dict(zip(roles, probs[n], strict=False)), vetoed)
            out[n] = np.array([got[r] for r in roles])
    return out


def _choices(rows, probs, roles):
    """Per (sheet, item role) the run-time choice (catalog.extraction.columns.choose_columns):
    (probability, lead over the best rival column, right?, present in the label?, taken?)."""
    from catalog.extraction.columns import ITEM_ROLES, choose_columns

    sheets = collections.defaultdict(list)
    for n, (_f, role, values, _h, where, _col) in enumerate(rows):
        sheets[where].append((n, role, values))
    out = []
    for members in sheets.values():
        p = [dict(zip(roles, probs[n], strict=False)) for n, _r, _v in members]
        truth = [r for _n, r, _v in members]
        chosen = choose_columns(p, [v for _n, _r, v in members], list(range(len(members))))
        for role in ITEM_ROLES:
            present = role in truth
            if role in chosen:
                c = chosen[role]
                rival = max((p[k].get(role, 0.0) for k in range(len(members)) if k != c), default=0.0)
                out.append(
                    (p[c].get(role, 0.0), p[c].get(role, 0.0) - rival, truth[c] == role, present, True)
                )
            else:
                free = [k for k in range(len(members)) if k not in chosen.values()]
                best = max((p[k].get(role, 0.0) for k in free), default=0.0)
                out.append((best, 0.0, not present, present, False))
    return out


def _choice_threshold(choices) -> float:
    """The lowest probability at which the roles taken are right at least TARGET of the time."""
    taken = sorted(((p, right) for p, _m, right, _present, was in choices if was), reverse=True)
    chosen, good = 1.0, 0
    for n, (p, right) in enumerate(taken, start=1):
        good += right
        if good / n < TARGET:
            break
        chosen = p
    return round(chosen, 4)


def _margin(choices, threshold: float) -> float:
    """The least lead over the rival column at which confident choices stay right TARGET of the time."""
    confident = [(m, right) for p, m, right, _present, was in choices if was and p >= threshold]
    chosen = 1.0
    for m in sorted({m for m, _r in confident}, reverse=True):
        sel = [right for mm, right in confident if mm >= m]
        if sum(sel) / len(sel) < TARGET:
            break
        chosen = m
    return round(chosen, 4)


def _absent_floor(choices) -> float:
    """The highest best-column probability below which a role is absent TARGET of the time."""
    pairs = sorted((p, present) for p, _m, _right, present, was in choices if not was)
    floor, absent = 0.0, 0
    for n, (p, present) in enumerate(pairs, start=1):
        absent += not present
        if absent / n < TARGET:
            break
        floor = p
    return round(floor, 4)


def _absent_floors(absences, what: str) -> dict[str, float]:
    """The floor per item role, printed with what it catches."""
    from catalog.extraction.columns import ITEM_ROLES

    floors = {role: _absent_floor([a[:5] for a in absences if a[2] == role]) for role in ITEM_ROLES}
    print(f"{what}, in doubt from a floor per role:")
    for role, floor in floors.items():
        got = [a for a in absences if a[2] == role]
        print(
            f"    {role:>12s}: {len(got)} sheets, {sum(a[3] for a in got)} labeled on a free column; from {floor}: "
            f"{sum(a[3] and a[0] >= floor for a in got)} of those, {sum(not a[3] and a[0] >= floor for a in got)} not labeled"
        )
        # The labeled sheet the floor is fitted to keep in doubt: the one caught with the least to spare.
        setter = min((a for a in got if a[3] and a[0] >= floor), key=lambda a: a[0], default=None)
        if setter is not None and floor > 0:
            (file, sheet), own = setter[5], setter[6]
            through = (
                "its labeled column"
                if own >= setter[0]
                else f"another free column (its labeled one: {own:.4f})"
            )
            without = _absent_floor([a[:5] for a in got if a[5] != setter[5]])
            print(
                f"    {'':>12s}  set by {file}, sheet {sheet}: {setter[0]:.4f}, through {through}; "
                f"without that sheet the floor would be {without}"
            )
    return floors


HEADLESS = ("noheader", "reverse+noheader")
# Cut to its first items, a sheet tells the model less: the floors of absent roles are fitted on
# the development lists as they are and so cut too, the shapes the sheet model's threshold is
# fitted on.
CUT = ("head20", "head5")


def changed_lists(
    labels: dict[str, dict], files: list[str], changes: tuple[str, ...]
) -> tuple[dict[str, dict], dict[str, object]]:
    """The labeled item lists of `files` that have a header, changed by each of ``changes``
    (``bench/corpus/perturb.py``: ``HEADLESS``, ``CUT``): (label, table) by ``FILE#CHANGE``, the
    name the label takes too (the file it comes from is the part before ``#``)."""
    from bench.corpus.perturb import perturbed

    out_labels, out_tables = {}, {}
    for f in files:
        label = labels.get(f)
        if not label or label["kind"] != "item_list":
            continue
        if not any(s.get("header_rows") for s in label.get("sheets") or []):
            continue
        try:
            table = read_table(CORPUS / f, filename=Path(f).name)
        except UnreadableSheet:
            continue
        for change in changes:
            name, got, lab = f"{f}#{change}", table, label
            for one in change.split("+"):
                got, lab = perturbed(one, got, lab)
            out_tables[name], out_labels[name] = got, {**lab, "file": name}
    return out_labels, out_tables


def choice_rows(choices, threshold: float) -> list[str]:
    taken = [(p, right) for p, _m, right, _present, was in choices if was]
    out = [f"    {'confidence':>12s} {'roles':>8s} {'right':>7s}"]
    edges = (0.0, 0.5, 0.8, 0.9, 0.95, 0.99, 1.0001)
    for lo, hi in pairwise(edges):
        sel = [r for p, r in taken if lo <= p < hi]
        if sel:
            out.append(f"    {lo:>5.2f}-{min(hi, 1):<6.2f} {len(sel):>8d} {sum(sel) / len(sel):>7.3f}")
    sel = [r for p, r in taken if p >= threshold]
    out.append(
        f"    >= {threshold:<8.4f} {len(sel):>8d} "
        + (f"{sum(sel) / len(sel):>7.3f}" if sel else "    n/a")
        + f"   (of {len(taken)} roles taken)"
    )
    return out


def calibration_rows(probs, y, threshold: float) -> list[str]:

    conf, right = probs.max(axis=1), probs.argmax(axis=1) == y
    out = [f"    {'confidence':>12s} {'columns':>8s} {'right':>7s}"]
    edges = (0.0, 0.5, 0.8, 0.9, 0.95, 0.99, 1.0001)
    for lo, hi in pairwise(edges):
        sel = (conf >= lo) & (conf < hi)
        if sel.sum():
            out.append(f"    {lo:>5.2f}-{min(hi, 1):<6.2f} {int(sel.sum()):>8d} {right[sel].mean():>7.3f}")
    sel = conf >= threshold
    out.append(
        f"    >= {threshold:<8.3f} {int(sel.sum()):>8d} "
        + (f"{right[sel].mean():>7.3f}" if sel.sum() else "    n/a")
        + f"   (of {len(y)} columns)"
    )
    return out


def train(labels: dict[str, dict], files: list[str] | None = None) -> dict:
    """The column model fitted on ``files`` (default: the development part)."""
    import numpy as np

    dev = split()["development"] if files is None else files
    rows = examples(labels, dev)
    roles = _roles(rows)
    features = sorted({f for _f, _r, v, *_rest in rows for f in v})
    headless_labels, headless_tables = changed_lists(labels, dev, HEADLESS)
    headless_rows = examples(headless_labels, list(headless_tables), headless_tables)
    cut_labels, cut_tables = changed_lists(labels, dev, CUT)
    cut_rows = examples(cut_labels, list(cut_tables), cut_tables)
    logits, y, changed_logits = _out_of_fold(rows, roles, features, headless_rows + cut_rows)
    headless_logits, cut_logits = changed_logits[: len(headless_rows)], changed_logits[len(headless_rows) :]
    temperature = _temperature(logits, y)
    probs = _vetoed(rows, _softmax(logits, temperature), roles)
    column_threshold = _threshold(probs, y)
    choices = _choices(rows, probs, roles)
    threshold = _choice_threshold(choices)
    margin, absent_floor = _margin(choices, threshold), _absent_floor(choices)
    print(
        f"{len(rows)} labeled columns of {len({f for f, *_ in rows})} development files; roles: {', '.join(roles)}"
    )
    print(
        f"temperature {temperature}; out-of-fold on the development part, every labeled column's most "
        f"likely role (threshold {column_threshold}):"
    )
    print("\n".join(calibration_rows(probs, y, column_threshold)))
    print(
        f"the item roles the extractor takes: threshold {threshold}, margin {margin}, absent floor {absent_floor}"
    )
    print("\n".join(choice_rows(choices, threshold)))
    # The header words the files back: only they lower the bar the model's agreement must reach.
    backed = backed_vocabulary(dev)
    agreed = agreements(rows, probs, roles, labels, dev, compile_vocabulary(backed))
    agree_threshold = _agree_threshold([a for a in agreed if not a[2]])
    agree_named_threshold = _agree_threshold([a for a in agreed if a[2]])
    print(
        "the rules' roles, confident when the model agrees (its most likely role, at least the threshold "
        "for a header that does not or does name the role):"
    )
    print("\n".join(agreement_rows(agreed, agree_threshold, agree_named_threshold)))
    absences = rules_absences(rows, probs, roles, labels, dev)
    cut_probs = _vetoed(cut_rows, _softmax(cut_logits, temperature), roles)
    absences += rules_absences(cut_rows, cut_probs, roles, cut_labels, list(cut_tables), cut_tables)
    rules_absent_floor = _absent_floors(
        absences, "the item roles the rules take no column for, as they are and cut to 20 and 5 items"
    )
    # Without its header a sheet is read from its values alone, and the model is less sure of a
    # role no column was taken for: the floors are fitted again on the development sheets with
    # their header rows removed.
    headless_probs = _vetoed(headless_rows, _softmax(headless_logits, temperature), roles)
    headless_absences = rules_absences(
        headless_rows, headless_probs, roles, headless_labels, list(headless_tables), headless_tables
    )
    rules_absent_floor_headless = _absent_floors(
        headless_absences, "the same, on the sheets without their header"
    )
    vocabulary = _vocabulary(rows)
    x, means, scales = _matrix(rows, features, vocabulary)
    model = _fit(x, y)
    weights = np.zeros((len(roles), x.shape[1]))
    intercepts = np.full(len(roles), -30.0)  # a role no development column had stays out of reach
    weights[model.classes_] = model.coef_
    intercepts[model.classes_] = model.intercept_
    content = {
        "trained_on": f"{len({f for f, *_ in rows})} development files, {len(rows)} columns",
        "seed": SEED,
        "C": C,
        "roles": roles,
        "features": features,
        "vocabulary": vocabulary,
        "means": [round(float(v), 6) for v in means],
        "scales": [round(float(v), 6) for v in scales],
        "weights": [[round(float(v), 5) for v in row] for row in weights],
        "intercepts": [round(float(v), 5) for v in intercepts],
        "temperature": temperature,
        "column_threshold": column_threshold,
        "threshold": threshold,
        "margin": margin,
        "absent_floor": absent_floor,
        "agree_threshold": agree_threshold,
        "agree_named_threshold": agree_named_threshold,
        "rules_absent_floor": rules_absent_floor,
        "rules_absent_floor_headless": rules_absent_floor_headless,
        "backed_words": {name: list(words) for name, words in backed.items() if words},
        "target": TARGET,
    }
    return versioned(content, [labels[f] for f in dev if f in labels])


def versioned(content: dict, labels: list[dict]) -> dict:
    """``content`` with its version: the labels it learned from and what it learned, so a model
    read another way (a change to the header reading, say) is another version."""
    digest = hashlib.sha256(json.dumps([labels, content], sort_keys=True).encode()).hexdigest()
    return {"version": f"1+{digest[:12]}", **content}


def command(fit, default: Path, description: str, argv=None) -> int:
    """``make train``'s command line for a model: ``fit(labels)`` written as JSON to ``--out``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--labels", type=Path, action="append", help="label folder(s); default bench/corpus/labels"
    )
    parser.add_argument("--out", type=Path, default=default)
    args = parser.parse_args(argv)
    model = fit(load_all(*(args.labels or ())))
    args.out.write_text(json.dumps(model, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(f"wrote {args.out} (version {model['version']})")
    return 0


def main(argv=None) -> int:
    return command(train, MODEL_PATH, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
