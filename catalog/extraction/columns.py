"""Column roles from the fitted column model, with what a reviewer must confirm.

Every column of a table body gets a calibrated probability for each role
(``catalog.extraction.column_model``: its values and its header words, the
weights fitted on the labeled development corpus). Values then veto what no
header can make true: a constant column is no SKU and no description, a
description holds text, a link is no description and no price, a running
row number, a column of years or of percentages is no price.

Each item role goes to the column most likely to hold it (one column per
role, a column's most likely role first). A column whose role is below the
model's confidence threshold, or that beat a rival column for its role by
less than the model's margin, needs confirmation; so does a role no column
took while one of them may hold it. The extractor flags every value taken
from such a column (the uncertain-column flag, its field the role).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from catalog.extraction.assignment import Assignment, Column
from catalog.extraction.column_model import (
    MAJORITY,
    MONEY_ROLES,
    ONE_VALUE,
    TEXT_COLUMN,
    code_shaped,
    column_values,
    load_model,
    placeless,
    sheet_features,
    value_vetoes,
    with_context,
)
from catalog.extraction.headers import Patterns, backed_words, classify_header
from catalog.extraction.text import col_letter

ROLES = ("sku", "description", "unit", "pack_size", "unit_price", "currency")
ITEM_ROLES = ROLES
# The roles ``second_opinion`` may move to the model's column: those whose choice the
# labeled corpus scores (price, description and SKU accuracy).
MOVABLE_ROLES = ("unit_price", "description", "sku")
_NAME_ROLES = ("description", "sku")


def _renormalized(probs: dict[str, float], vetoed: dict[str, str]) -> dict[str, float]:
    """The vetoed roles' probability goes to "other": the values say the column is something else."""
    kept = {r: (0.0 if r in vetoed else p) for r, p in probs.items()}
    kept["other"] = kept.get("other", 0.0) + sum(p for r, p in probs.items() if r in vetoed)
    return kept


def column_probabilities(
    body: list[list[str]],
    width: int,
    labels: list[str],
    features: list[dict] | None = None,
    anywhere: bool = False,
) -> list[tuple[dict, dict, dict]]:
    """Per column: (role -> probability after the vetoes, the vetoes, the value features);
    ``features`` are ``sheet_features(body, width)`` when already computed. ``anywhere``: read
    each column as if it could stand anywhere on the sheet (``column_model.placeless``)."""
    model = load_model()
    feats = with_context(features if features is not None else sheet_features(body, width))
    if anywhere:
        feats = placeless(feats)
    out = []
    for c, f in enumerate(feats):
        label = labels[c] if c < len(labels) else ""
        vetoed = value_vetoes(f)
        out.append((_renormalized(model.probabilities(f, label), vetoed), vetoed, f))
    return out


def _best_role_first(probs: list[dict], live: list[int]) -> dict[str, int]:
    """Item roles to columns: highest probability first, each column its most likely role."""
    roles: dict[str, int] = {}
    ranked = sorted(
        ((probs[c].get(r, 0.0), r, c) for c in live for r in ITEM_ROLES), key=lambda t: (-t[0], t[2])
    )
    for p, role, c in ranked:
        if role in roles or c in roles.values() or p <= 0:
            continue
        if p >= max(probs[c].values()):
            roles[role] = c
    return roles


def _fallback(probs: list[dict], feats: list[dict], live: list[int], roles: dict[str, int]) -> None:
    """No price or no name column by the model: the likeliest column by its values, to confirm."""
    free = [c for c in live if c not in roles.values()]
    if "unit_price" not in roles:
        # Prices written as text ("$150/hr", "от 1 500") still hold digits; a column the model
        # gave a lesser role (unit, pack size) may be the price, one naming the items may not.
        names = {roles.get(r) for r in _NAME_ROLES}
        money = [
            (sum(probs[c].get(r, 0.0) for r in MONEY_ROLES) * feats[c].get("digits", 0.0), c)
            for c in live
            if c not in names
            and probs[c].get("unit_price", 0.0) > 0
            and feats[c].get("digits", 0.0) > MAJORITY
        ]
        if money:
            col = max(money)[1]
            for role in [r for r, c in roles.items() if c == col]:
                del roles[role]
            roles["unit_price"] = col
            free = [c for c in live if c not in roles.values()]
    if "description" not in roles:
        names = [
            (probs[c].get("description", 0.0), c)
            for c in free
            if feats[c].get("alpha", 0.0) > MAJORITY and probs[c].get("description", 0.0) > 0
        ]
        if names and (max(names)[0] >= load_model().absent_floor or "sku" not in roles):
            roles["description"] = max(names)[1]


def choose_columns(probs: list[dict], feats: list[dict], live: list[int]) -> dict[str, int]:
    """Item role -> column: each column its most likely role, then a price and a name by their values."""
    roles = _best_role_first(probs, live)
    _fallback(probs, feats, live, roles)
    if "currency" not in roles:
        # Too few development sheets have a currency column for the model to learn the role;
        # a column whose values are mostly ISO 4217 codes is one.
        codes = [
            (feats[c].get("iso_code", 0.0), c)
            for c in live
            if c not in roles.values() and feats[c].get("iso_code", 0.0) > MAJORITY
        ]
        if codes:
            roles["currency"] = max(codes)[1]
    return roles


def _doubt(probs: list[dict], role: str, col: int, live: list[int]) -> str | None:
    model = load_model()
    p = probs[col].get(role, 0.0)
    rival = max(((probs[c].get(role, 0.0), c) for c in live if c != col), default=(0.0, None))
    if p < model.threshold:
        return f"column {col_letter(col)} was taken as the {role.replace('_', ' ')} with confidence {p:.2f}"
    if p - rival[0] < model.margin:
        return (
            f"columns {col_letter(col)} and {col_letter(rival[1])} could both be the "
            f"{role.replace('_', ' ')} ({p:.2f} and {rival[0]:.2f})"
        )
    return None


def _absent_doubts(probs: list[dict], live: list[int], roles: dict[str, int]) -> dict[str, tuple[int, str]]:
    """Roles no column took although a free column may hold them: role -> (column, why)."""
    model = load_model()
    out = {}
    free = [c for c in live if c not in roles.values()]
    for role in ITEM_ROLES:
        if role in roles or not free:
            continue
        p, c = max((probs[c].get(role, 0.0), c) for c in free)
        if p >= model.absent_floor:
            out[role] = (
                c,
                f"column {col_letter(c)} may hold the {role.replace('_', ' ')} ({p:.2f}); none was taken",
            )
    return out


def _evidence(f: dict, vetoed: dict[str, str], probs: dict[str, float]) -> list[str]:
    top = sorted(probs.items(), key=lambda kv: -kv[1])[:3]
    out = [", ".join(f"{r} {p:.2f}" for r, p in top if p >= 0.01)]
    if f.get("filled"):
        out.append(f"{f.get('numeric', 0):.0%} numbers, {f.get('distinct', 0):.0%} distinct")
    out += [f"not {r}: {why}" for r, why in sorted(vetoed.items())]
    return out


def _fixed_assignment(fixed: dict[str, int | None], labels: list[str], width: int) -> Assignment:
    roles = {r: c for r, c in fixed.items() if c is not None}
    by_col = {c: r for r, c in roles.items()}
    columns = [
        Column(
            c,
            labels[c] if c < len(labels) else "",
            by_col.get(c, "other"),
            1.0,
            ["set by a reviewer"] if c in by_col else [],
            kind=by_col.get(c, "other"),
        )
        for c in range(width)
    ]
    return Assignment(roles=roles, columns=columns, doubts=[])


def assign_roles(
    body: list[list[str]], width: int, labels: list[str], fixed: dict[str, int | None] | None = None
) -> Assignment:
    """The roles of the columns of ``body`` (``fixed``, a reviewer's mapping, is taken as given)."""
    if fixed:
        return _fixed_assignment(fixed, labels, width)
    scored = column_probabilities(body, width, labels)
    probs = [p for p, _v, _f in scored]
    feats = [f for _p, _v, f in scored]
    live = [c for c in range(width) if feats[c].get("filled") or (c < len(labels) and labels[c])]
    roles = choose_columns(probs, feats, live)
    doubted, flagged_cols = {}, set()
    for role, col in roles.items():
        why = _doubt(probs, role, col, live)
        if why:
            doubted[role] = (col, why)
            flagged_cols.add(col)
    for role, (col, why) in _absent_doubts(probs, live, roles).items():
        doubted[role] = (col, why)
        flagged_cols.add(col)
    by_col = {c: r for r, c in roles.items()}
    columns = []
    for c in live:
        p, vetoed, f = scored[c]
        kind = max(p, key=p.get) if p else "other"
        role = by_col.get(c, "other")
        columns.append(
            Column(
                c,
                labels[c] if c < len(labels) else "",
                role,
                p.get(role, p.get(kind, 0.0)),
                _evidence(f, vetoed, p),
                kind=kind,
                needs_confirmation=c in flagged_cols,
            )
        )
    other_prices = [c for c in live if c not in by_col and max(probs[c], key=probs[c].get) in MONEY_ROLES]
    return Assignment(
        roles=roles,
        columns=columns,
        doubts=[why for _c, why in doubted.values()],
        other_prices=other_prices,
        doubted=doubted,
    )


def agrees(probs: dict[str, float], role: str, threshold: float) -> bool:
    """The model reads the column as ``role`` too: its most likely role, with at least ``threshold``."""
    p = probs.get(role, 0.0)
    return p >= threshold and p >= max(probs.values())


_PRICES = ("unit_price", "alt_price")
_TEXT_ROLES = ("sku", "description")


def reads_as_a_price(probs: dict[str, float]) -> tuple[bool, float]:
    """Whether the model reads the column as a price of some kind (the unit price and another
    price taken together are its most likely reading), and with what probability."""
    mass = sum(probs.get(r, 0.0) for r in _PRICES)
    return mass >= max((p for r, p in probs.items() if r not in _PRICES), default=0.0), mass


def _filled(probs: list[dict], feats: list[dict]) -> list[dict | None]:
    """Every column's probabilities, None for a column with no values (it reads as nothing)."""
    return [p if "numeric" in f else None for p, f in zip(probs, feats, strict=True)]


def agreement(probs: list[dict[str, float]], col: int, role: str) -> float:
    """How sure the model is of the rules' ``role`` for column ``col`` (``probs``: every column's
    probabilities on the sheet, None for an empty column): the role's probability when it is the
    column's most likely role, else 0. Which price a sheet's unit price is needs no choice when
    the model reads no other column as a price: the unit price is then as sure as the column is
    a price at all."""
    p = probs[col]
    if not p:
        return 0.0  # a column with no values in the rows read: nothing to agree with
    score = p.get(role, 0.0) if agrees(p, role, 0.0) else 0.0
    if role == "unit_price":
        price, mass = reads_as_a_price(p)
        if price and not any(q and reads_as_a_price(q)[0] for c, q in enumerate(probs) if c != col):
            score = max(score, mass)
    return score


def header_names(label: str, role: str, patterns: Patterns | None = None) -> bool:
    """The header names ``role`` in words the development part backs (``patterns``, default
    ``backed_words``). Only such a header lowers the bar the model's agreement must reach
    (``agreement_threshold``) or tells codes from names (``_code_names``): a word the corpus does
    not back still proposes a column for its role, and the model alone then decides whether
    the column needs confirmation."""
    got = classify_header(label, patterns or backed_words())
    return bool(got and got[0] == role)


def agreement_threshold(label: str, role: str) -> float:
    """How sure the model must be of a role the rules took, for the column to need no confirmation."""
    model = load_model()
    return model.agree_named_threshold if header_names(label, role) else model.agree_threshold


def _bare(labels: Sequence[str]) -> bool:
    """The sheet has no header row: no column has a word over it."""
    return not any(label.strip() for label in labels)


def _absence_readings(scored: list[tuple[dict, dict, dict]], labels: Sequence[str]) -> list[dict]:
    """Every column's probabilities (``column_probabilities``' ``scored``) as the roles no column
    holds are read: a column whose values hold one value on every row read keeps the SKU and
    the description that veto takes from it. The veto keeps such a column from being taken
    (a constant column is no SKU), not from holding the role: a short list can repeat one code
    on every row read, and the SKU no column holds is then in doubt."""
    model = load_model()
    out = []
    for c, (p, vetoed, f) in enumerate(scored):
        if ONE_VALUE in vetoed.values():
            label = labels[c] if c < len(labels) else ""
            p = _renormalized(model.probabilities(f, label), value_vetoes({**f, "constant": 0.0}))
        out.append(p)
    return out


def _rules_absences(
    rules,
    probs: list[dict],
    in_doubt: set[int] = frozenset(),
    *,
    unnamed: Collection[int] = (),
    bare: bool = False,
) -> dict[str, tuple[int, str]]:
    """Item roles the rules took no column for while a column that holds no item role may hold
    one (a column they took as a quantity is not read into items, so it counts as free), or a
    column whose own role is in doubt (``in_doubt``: a column of codes taken as the price on a
    close call, or one the model reads as something else, may be the SKU; the floors are fitted
    on the columns the rules leave free, so such a column only adds doubts): role -> (column,
    why), from the model's ``rules_absent_floor``,
    or for a column read from its values alone (``unnamed``: its header holds no word the
    development part backs or the model knows, or the sheet has none) the floors fitted on
    sheets without their header. On a ``bare`` sheet (no header row at all, so a reviewer
    confirms its columns anyway) the SKU is in doubt whenever a free column may hold it at
    all: the headerless floor rests on the 10 labeled free SKU columns of those sheets, and a
    model fitted without a fifth of the development files put it 9 times higher (0.054 against
    0.006), above the SKU of a list whose codes are plain numbers (0.045)."""
    model = load_model()
    items = _item_columns(rules)
    free = [c.col for c in rules.columns if c.col not in items or c.col in in_doubt]
    out = {}
    for role in ITEM_ROLES:
        if role in rules.roles:
            continue
        floor = {
            False: model.rules_absent_floor.get(role, 1.0),
            True: 0.0 if bare and role == "sku" else model.rules_absent_floor_headless.get(role, 1.0),
        }
        likely = [(p, c) for c in free if (p := probs[c].get(role, 0.0)) > 0 and p >= floor[c in unnamed]]
        if likely:
            p, col = max(likely)
            out[role] = (
                col,
                f"column {col_letter(col)} may hold the {role.replace('_', ' ')} ({p:.2f}); none was taken",
            )
    return out


_ANYWHERE = ", had the columns stood anywhere on the sheet"


def _disagreement(probs: list[dict | None], col: int, role: str, bar: float) -> str | None:
    """How the model reads column ``col``, when it does not confirm the rules' ``role`` for it
    (``agreement`` below ``bar``, or none at all); None when it does."""
    sure = agreement(probs, col, role)
    if sure > 0 and sure >= bar:
        return None
    name = role.replace("_", " ")
    if sure > 0:
        return f"{name} ({sure:.2f}), below the {bar:.2f} that confirms it"
    p = probs[col] or {}
    kind = max(p, key=p.get) if p else "nothing"
    return f"{kind.replace('_', ' ')} ({p.get(kind, 0.0):.2f}), {name} {p.get(role, 0.0):.2f}"


def second_opinion(
    rules, body: list[list[str]], width: int, labels: list[str], features: list[dict] | None = None
) -> Assignment:
    """The rules' roles (``rules_columns.assign_roles``), with the model's doubt on each of them.

    A column the rules gave a role is confident only when the model agrees
    (``agrees`` at ``agreement_threshold``: the model's thresholds for a
    header that names the role and for one that does not, chosen out of fold
    on the development part by ``make train``) and still reads it as that
    role with the columns standing anywhere (``column_model.placeless``);
    otherwise it needs confirmation and its values are flagged on that
    field. A second price or a likelier SKU or description in another
    column puts the role in doubt too, read either way. A role in doubt
    that the model gives to another column is then taken from that column
    (``_take_model_columns``). On a sheet whose header says nothing, absent
    roles are read from the floors fitted without headers. On one whose
    header says nothing or names no price over values, a price the rules
    found no column for is taken from the model's (``_take_model_price``).
    """
    scored = column_probabilities(body, width, labels, features)
    probs = [p for p, _v, _f in scored]
    feats = [f for _p, _v, f in scored]
    filled = _filled(probs, feats)
    anywhere = _filled(
        [p for p, _v, _f in column_probabilities(body, width, labels, features, anywhere=True)], feats
    )
    doubted: dict[str, tuple[int, str]] = {}
    for role, col in rules.roles.items():
        if role in rules.doubted or role not in ITEM_ROLES:
            continue  # the rules' own doubt (a close call, a header that names another column) stands
        # Where a column stands tells the model something (prices stand right of names), but a
        # role the model confirms there rests on its place, not on what it holds, when the model
        # reads the column as another role had it stood anywhere (the bars are fitted on columns
        # where they stand: only the reading counts, not how sure it is).
        label = labels[col] if col < len(labels) else ""
        why = _disagreement(filled, col, role, agreement_threshold(label, role))
        if why is None and (why := _disagreement(anywhere, col, role, 0.0)):
            why = f"{why}{_ANYWHERE}"
        if why:
            doubted[role] = (
                col,
                f"column {col_letter(col)} was taken as the {role.replace('_', ' ')}; "
                f"the column model reads it as {why}",
            )
    disputed = {c for c, _why in doubted.values()}  # columns whose role the model does not agree with
    if "unit_price" not in doubted:
        doubted.update(_other_prices(rules, filled) or _other_prices(rules, anywhere, _ANYWHERE))
    if "sku" not in doubted:
        doubted.update(_article_numbers(rules, feats))
    rivals = {**_rivals(rules, anywhere, _ANYWHERE), **_rivals(rules, filled)}
    doubted.update({r: d for r, d in rivals.items() if r not in doubted})
    if "description" not in doubted:
        doubted.update(_other_texts(rules, feats))
    in_doubt = {c for c, _why in rules.doubted.values()}
    # A header none of whose words the development part backs or the model knows (a language
    # neither has seen) says no more than no header: such a column, and every column of a sheet
    # whose header names nothing, is read with the floors fitted on headerless sheets.
    model = load_model()
    backed = backed_words()
    unnamed = {
        c
        for c in range(len(scored))
        if not (
            (label := labels[c] if c < len(labels) else "")
            and (classify_header(label, backed) or model.knows(label))
        )
    }
    headless = len(unnamed) == len(scored)
    doubted.update(_code_names(rules, body, labels, {**doubted, **rules.doubted}))
    absence = _absence_readings(scored, labels)
    doubted.update(_rules_absences(rules, absence, in_doubt | disputed, unnamed=unnamed, bare=_bare(labels)))
    reasons = [w for _c, w in doubted.values()]
    doubted.update(rules.doubted)
    flagged = {c for c, _why in doubted.values()}
    by_col = {c: r for r, c in rules.roles.items()}
    columns = []
    for c in rules.columns:
        p, vetoed, f = scored[c.col]
        role = by_col.get(c.col, "other")
        columns.append(
            Column(
                c.col,
                c.header,
                role,
                p.get(role, 0.0) if role != "other" else c.confidence,
                c.evidence + _evidence(f, vetoed, p),
                kind=max(p, key=p.get),
                needs_confirmation=c.col in flagged,
            )
        )
    got = Assignment(
        roles=dict(rules.roles),
        columns=columns,
        doubts=rules.doubts + reasons,
        other_prices=rules.other_prices,
        doubted=doubted,
    )
    model_roles = choose_columns(probs, feats, [c.col for c in rules.columns])
    _take_model_names(got, model_roles, probs)
    _take_model_columns(got, model_roles, probs, feats, unnamed=unnamed, labels=labels, absence=absence)
    if (headless or not _price_named_over_values(labels, feats)) and "unit_price" not in got.roles:
        _take_model_price(got, model_roles, probs)
        _take_model_names(got, model_roles, probs)
    return got


def _item_columns(got) -> set[int]:
    """The columns an assignment takes an item role from."""
    return {c for r, c in got.roles.items() if r in ITEM_ROLES}


def _other_prices(rules, probs: list[dict | None], where: str = "") -> dict[str, tuple[int, str]]:
    """The unit price, when the model reads another column that holds no item role as a price
    too (tiers, currencies, with and without tax): which is the item's price is a choice the
    values do not settle (on the 39 development item sheets where a price is another column's
    most likely role, the rules' price column is the labeled one on 24), so it needs
    confirmation. "unit_price" -> (column, why), or nothing."""
    col = rules.roles.get("unit_price")
    if col is None or "unit_price" in rules.doubted:
        return {}
    taken = _item_columns(rules)
    rivals = [c for c, p in enumerate(probs) if c not in taken and p and reads_as_a_price(p)[0]]
    if not rivals:
        return {}
    return {
        "unit_price": (
            col,
            f"column {col_letter(col)} was taken as the unit price; the column model reads "
            f"column {col_letter(rivals[0])} as a price too{where}",
        )
    }


def _article_numbers(rules, feats: list[dict]) -> dict[str, tuple[int, str]]:
    """The SKU, when most of its column's values are article numbers whose check digit holds
    (``column_model.is_gtin``: EAN, UPC, GTIN): such a column is a barcode far more often than
    the supplier's own code (of the 10 labeled development columns that are, 9 are barcodes),
    so it needs confirmation. "sku" -> (column, why), or nothing."""
    col = rules.roles.get("sku")
    if col is None or "sku" in rules.doubted or feats[col].get("gtin", 0.0) <= MAJORITY:
        return {}
    return {
        "sku": (
            col,
            f"column {col_letter(col)} was taken as the SKU; most of its values are article "
            "numbers (EAN, UPC) whose check digit holds: a barcode, or the supplier's code?",
        )
    }


def _rivals(rules, probs: list[dict | None], where: str = "") -> dict[str, tuple[int, str]]:
    """The SKU or the description, when the model reads a column that holds no item role as
    that role, its likeliest, more likely than the rules' column (a supplier's code beside a
    maker's part number under a header one column off; a name beside a longer note): the role
    lost to a rival, for each role a column of text may hold. role -> (column, why)."""
    taken = _item_columns(rules)
    out = {}
    for role in _TEXT_ROLES:
        col = rules.roles.get(role)
        if col is None or role in rules.doubted or not probs[col]:
            continue
        sure = probs[col].get(role, 0.0)
        rivals = [
            c
            for c, p in enumerate(probs)
            if c not in taken and p and agrees(p, role, sure) and p[role] > sure
        ]
        if rivals:
            name = "SKU" if role == "sku" else role
            out[role] = (
                col,
                f"column {col_letter(col)} was taken as the {name}; the column model reads column "
                f"{col_letter(rivals[0])} as the {name} more likely{where}",
            )
    return out


def _other_texts(rules, feats: list[dict]) -> dict[str, tuple[int, str]]:
    """The description, when another column that holds no item role holds text as the
    description's does: mostly words (``TEXT_COLUMN``), more than half its values distinct, no
    codes, nothing that vetoes a description. Which of two such columns names the items (a
    name beside a note or a specification, a name beside its translation) the values do not
    settle, and the model reads it from their length and from where they stand: 15 of the
    development part's 80 item lists hold such a column beside the labeled description.
    "description" -> (column, why), or nothing."""
    col = rules.roles.get("description")
    if col is None or "description" in rules.doubted:
        return {}
    taken = _item_columns(rules)
    rivals = [
        c
        for c, f in enumerate(feats)
        if c not in taken
        and f.get("alpha", 0.0) >= TEXT_COLUMN
        and f.get("distinct", 0.0) > MAJORITY
        and f.get("code_shape", 0.0) <= MAJORITY
        and "description" not in value_vetoes(f)
    ]
    if not rivals:
        return {}
    return {
        "description": (
            col,
            f"column {col_letter(col)} was taken as the description; column {col_letter(rivals[0])} "
            "holds varied text too: either may name the items",
        )
    }


def code_led(values: list[str]) -> bool:
    """Most of the values start with a code: a first word of letters and digits ("IPC-120 (PoE)")."""
    firsts = [v.split()[0] for v in values if v.split()]
    return bool(firsts) and sum(1 for v in firsts if code_shaped(v)) > MAJORITY * len(firsts)


def _code_names(rules, body: list[list[str]], labels: list[str], doubted: dict) -> dict[str, tuple[int, str]]:
    """The SKU or the description, when it is the only column naming the items with
    confidence, its values mostly start with a code (a first word of letters and digits:
    "IPC-120 (PoE)") and its header does not name its role: role -> (column, why). Such a
    column is the description of some sheets (a model code is the only name) and the SKU of
    others (a code list); only its header tells which (on the development part, 6 sheets
    whose only name is such a column label it the description, 3 the SKU), so without a
    header that names it the role needs confirmation."""
    names = [r for r in _NAME_ROLES if r in rules.roles and r not in doubted]
    if len(names) != 1:
        return {}
    role = names[0]
    col = rules.roles[role]
    label = labels[col] if col < len(labels) else ""
    if header_names(label, role):
        return {}
    if not code_led(column_values(body, col)[0]):
        return {}
    return {
        role: (
            col,
            f"column {col_letter(col)} is the only column naming the items and holds codes; "
            "its header does not say whether they are SKUs or names",
        )
    }


def _price_named_over_values(labels: list[str], feats: list[dict]) -> bool:
    """The header names the price over a column its body fills. Without one (no price word at
    all, or one over a column never filled in: a header off its values) the header says nothing
    of where the prices are."""
    return any(
        c < len(feats)
        and feats[c].get("filled")
        and (got := classify_header(label))
        and got[0] == "unit_price"
        for c, label in enumerate(labels)
    )


def _take_model_price(got: Assignment, model_roles: dict[str, int], probs: list[dict]) -> None:
    """A sheet whose header says nothing of the price (no header, no word the development part
    backs or the model knows, no price word, or one over an empty column) where the rules found no price
    column (prices written as text, "Rp 150.000.000") while the model gives the price to a
    column that holds no item role: that column is taken, in doubt, so the sheet goes to review instead of being refused (a refusal needs positive evidence)."""
    col = model_roles.get("unit_price")
    if "unit_price" in got.roles or col is None:
        return
    if any(c == col for r, c in got.roles.items() if r in ITEM_ROLES):
        return
    _take_from_model(got, "unit_price", col, probs, "the rules found no price column")


def _take_model_names(got: Assignment, model_roles: dict[str, int], probs: list[dict]) -> None:
    """No column names the items by the rules (a sheet without a header whose names are short,
    as Chinese names are), while the model gives the description or the SKU to a column that
    holds no item role: that column is taken, in doubt, so the sheet is read for a reviewer to
    confirm instead of refused (refusing needs positive evidence; the model's reading is an
    item-list reading that fits)."""
    if "unit_price" not in got.roles or any(r in got.roles for r in _NAME_ROLES):
        return
    taken = _item_columns(got)
    for role in _NAME_ROLES:
        col = model_roles.get(role)
        if col is None or col in taken:
            continue
        _take_from_model(got, role, col, probs, "the rules found no column naming the items")
        taken.add(col)


def _take_from_model(got: Assignment, role: str, col: int, probs: list[dict], because: str) -> None:
    """Column ``col`` takes ``role`` from the model, in doubt, and gives up any role it held."""
    for other in [r for r, c in got.roles.items() if c == col]:
        del got.roles[other]
    got.roles[role] = col
    why = (
        f"column {col_letter(col)} was taken as the {role.replace('_', ' ')} by the column model "
        f"({probs[col].get(role, 0.0):.2f}); {because}"
    )
    if role in got.doubted and got.doubted[role][1] in got.doubts:  # an absence this answers
        got.doubts.remove(got.doubted[role][1])
    got.doubted[role] = (col, why)
    got.doubts.append(why)
    got.moved.append(role)
    for c in got.columns:
        if c.col == col:
            c.role, c.confidence, c.needs_confirmation = role, probs[col].get(role, 0.0), True


def _filled_share(role: str, f: dict) -> float:
    """The share of rows whose value in the column can be the ``role`` (a price needs a number)."""
    return f.get("filled", 0.0) * (f.get("numeric", 0.0) if role == "unit_price" else 1.0)


def _may_move(
    role: str,
    col: int,
    new: int,
    taken: dict[int, str],
    probs: list[dict],
    feats: list[dict],
    unheaded: bool = False,
) -> bool:
    """``role`` may move from the rules' column ``col`` to the model's ``new`` (see
    ``_take_model_columns``). The model reads ``new`` as the role at least as likely as ``col``;
    for a price the rules took by its values alone (``unheaded``: no word over ``col`` the
    development part backs or the model knows), or as a price of any kind (the unit price and
    another price taken together, as ``reads_as_a_price`` reads it)."""
    likelier = probs[new].get(role, 0.0) >= probs[col].get(role, 0.0)
    as_a_price = reads_as_a_price(probs[new])[1] >= reads_as_a_price(probs[col])[1]
    return (
        taken.get(new) not in ITEM_ROLES
        and _filled_share(role, feats[new]) >= _filled_share(role, feats[col])
        and (likelier or (role == "unit_price" and unheaded and as_a_price))
    )


def _named_price_stays(labels: Sequence[str], col: int, new: int) -> bool:
    """The price stays in the rules' column ``col`` when its header names the price in words
    the development part backs and the header of the model's column ``new`` does not: the
    model reads prices from their values, which do not tell a price from a weight or another
    price list's amounts. On the development part, both prices the model would move so were
    wrong (to a column of weights, and to another customer group's prices, on 2 files); its
    other price moves, between two named columns or two unnamed ones, were right on 6 files and
    wrong on 4."""

    def label(c: int) -> str:
        return labels[c] if c < len(labels) else ""

    return header_names(label(col), "unit_price") and not header_names(label(new), "unit_price")


def _take_model_columns(
    got: Assignment,
    model_roles: dict[str, int],
    probs: list[dict],
    feats: list[dict],
    *,
    unnamed: Collection[int] = (),
    labels: Sequence[str] = (),
    absence: Sequence[dict] | None = None,
) -> None:
    """A role in doubt (``got.doubted``) that the model gives to another column is taken from
    the model's column, still in doubt (``got.moved`` names it, so the doubt is always shown):
    on the labeled development part the model's column was the right one more often than the
    rules' (19 roles to 10; README.md, "What a parse job does"). Not when the model's column
    holds another item role, nor when it holds the role on fewer rows (a price needs a
    number): no item is lost by the move. Nor when the model reads the rules' column as the
    role more likely than its own: it gave its column the role for want of a better one; unless
    the role is a price the rules took by its values alone and the model reads its column as a
    price of any kind at least as surely (``_may_move``). Nor a price from under a header
    that names it to a column whose header does not (``_named_price_stays``)."""
    taken = {c: r for r, c in got.roles.items()}
    for role in MOVABLE_ROLES:
        col, new = got.roles.get(role), model_roles.get(role)
        if col is None or new is None or new == col or role not in got.doubted:
            continue
        if not _may_move(role, col, new, taken, probs, feats, unheaded=col in unnamed):
            continue
        if role == "unit_price" and _named_price_stays(labels, col, new):
            continue
        for other in [r for r, c in got.roles.items() if c == new]:
            del got.roles[other]
        got.roles[role] = new
        del taken[col]
        taken[new] = role
        why = (
            f"column {col_letter(new)} was taken as the {role.replace('_', ' ')} by the column model "
            f"({probs[new].get(role, 0.0):.2f}) over column {col_letter(col)} ({probs[col].get(role, 0.0):.2f})"
        )
        got.doubted[role] = (new, why)
        got.doubts.append(why)
        got.moved.append(role)
        for c in got.columns:
            if c.col == col:
                c.role, c.needs_confirmation = "other", True
            elif c.col == new:
                c.role, c.confidence, c.needs_confirmation = role, probs[new].get(role, 0.0), True
        if new in got.other_prices:
            got.other_prices.remove(new)
            got.other_prices.append(col)
    if not got.moved:
        return
    # The column a role left may hold a role no column holds now (a price moved off a column of
    # codes leaves the SKU to it), be a rival of the SKU (a description moved off a column of
    # codes) or a second price (an SKU moved off a column of prices): the absences, the rivals
    # and the other prices are read again on the roles as they now stand.
    filled = _filled(probs, feats)
    again = {
        **_rules_absences(got, absence or probs, unnamed=unnamed, bare=_bare(labels)),
        **_rivals(got, filled),
        **_other_prices(got, filled),
    }
    for role, (c, why) in again.items():
        if role not in got.doubted:
            got.doubted[role] = (c, why)
            got.doubts.append(why)
            for column in got.columns:
                if column.col == c:
                    column.needs_confirmation = True
