"""Column roles from content, with the header as evidence.

Each column of a table body gets a profile of its values (share of numbers
and decimals, code-like tokens, text length, distinctness, unit words,
currency codes, row numbers); each role gets a score from that profile plus
the header's words; the best consistent assignment wins (one column per
role). Every assigned column carries its evidence and a confidence, and the
assignment says what a reviewer should confirm.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from catalog.extraction.assignment import Assignment, Column
from catalog.extraction.column_model import MAJORITY, sheet_features, value_vetoes
from catalog.extraction.headers import classify_header, header_says_not
from catalog.extraction.money import find_currencies, parse_decimal
from catalog.extraction.text import cap, cell, col_letter

ROLES = ("sku", "description", "unit", "pack_size", "unit_price", "currency", "quantity")
ITEM_ROLES = ROLES[:6]  # the roles an item is made of (a quantity column is not read into items)
SAMPLE_ROWS = 2000
# The least score a column needs to take a role.
THRESHOLDS = {
    "sku": 0.45,
    "description": 0.3,
    "unit": 0.45,
    "pack_size": 0.5,
    "unit_price": 0.35,
    "currency": 0.5,
    "quantity": 0.5,
}
HEADER_BONUS = {1: 0.3, 2: 0.45, 3: 0.55}
CLOSE_CALL = 0.15  # two columns this close for one role: a reviewer decides
WEAK_DESCRIPTION = 0.5

_CODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-./_#]{1,39}+")
# A number written with two decimal places ("24.00", "1 913,69"): how amounts of money are
# written; codes with a dot carry three or more places ("3100.046", "063.0150").
_CENTS = re.compile(r"-?\d[\d ,.\u00a0']{0,20}[.,]\d\d")
_DIGITS = re.compile(r"\d++")


@dataclass
class Profile:
    col: int
    filled: float = 0.0
    numeric: float = 0.0
    decimals: float = 0.0
    integers: float = 0.0
    money: float = 0.0
    code: float = 0.0
    alpha: float = 0.0
    mean_len: float = 0.0
    words: float = 0.0
    distinct: float = 0.0
    unit_words: float = 0.0
    currency_codes: float = 0.0
    cents: float = 0.0
    sequential: bool = False
    vetoes: dict[str, str] = field(default_factory=dict)  # role -> why the values rule it out


def _code_weight(text: str) -> float:
    if len(text) > 40 or not _CODE.fullmatch(text):
        return 0.0
    if _DIGITS.fullmatch(text):
        # Digits alone are codes only when long, and prices are often round.
        return 0.0 if len(text) < 5 or text.endswith("00") else 0.6
    has_digit = any(ch.isdigit() for ch in text)
    return 1.0 if has_digit else (0.5 if text.isupper() and len(text) >= 3 else 0.0)


def _value_stats(texts: list[str], f: dict[str, float]) -> dict:
    """The column model's number features of the same values (``f``, from ``sheet_features``),
    and the share of amounts written with a currency."""
    return {
        "numeric": f.get("numeric", 0.0),
        "decimals": f.get("decimals", 0.0),
        "integers": f.get("integers", 0.0),
        "money": sum(1 for t in texts if parse_decimal(t) is not None and find_currencies(t)) / len(texts),
        "sequential": bool(f.get("running_index")),
    }


def _text_stats(texts: list[str], f: dict[str, float]) -> dict:
    """How the values read as codes, their length in characters and words, and amounts written
    with cents; the shares of text, distinct values, unit words and currency codes are the
    column model's features of the same values (``f``)."""
    n = len(texts)
    return {
        "code": sum(_code_weight(t) for t in texts) / n,
        "alpha": f.get("alpha", 0.0),
        "mean_len": sum(len(t) for t in texts) / n,
        "words": sum(len(t.split()) for t in texts) / n,
        "distinct": f.get("distinct", 0.0),
        "unit_words": f.get("unit_words", 0.0),
        "currency_codes": f.get("iso_code", 0.0),
        "cents": sum(1 for t in texts if len(t) <= 24 and _CENTS.fullmatch(t)) / n,
    }


def profile_columns(
    rows: list[list[str]], width: int, features: list[dict[str, float]] | None = None
) -> list[Profile]:
    """A profile of every column over ``rows`` (the body: rows below the header); ``features``
    are ``column_model.sheet_features`` of the same rows when already computed."""
    sample = [r for r in rows if r][:SAMPLE_ROWS]
    if features is None:
        features = sheet_features(rows, width)
    profiles = []
    for col in range(width):
        values = [r[col] for r in sample if col < len(r) and r[col]]
        texts = [cap(v) for v in values]
        p = Profile(col=col)
        if texts:
            p.filled = len(texts) / max(1, len(sample))
            for key, value in {
                **_value_stats(texts, features[col]),
                **_text_stats(texts, features[col]),
            }.items():
                setattr(p, key, value)
            p.vetoes = value_vetoes(features[col])
        profiles.append(p)
    return profiles


def content_scores(p: Profile) -> dict[str, tuple[float, str]]:
    """role -> (score from the values alone, evidence in words)."""
    if not p.filled:
        return {}
    fill = min(1.0, p.filled * 1.5)
    text_share = 1.0 - p.numeric
    scores = {
        "unit_price": (
            0.0 if p.sequential else p.numeric * (0.5 + 0.3 * p.decimals + 0.2 * p.money),
            f"{p.numeric:.0%} numbers, {p.decimals:.0%} of them with decimals",
        ),
        "description": (
            p.alpha * text_share * min(1.0, p.mean_len / 15) * (0.4 + 0.6 * p.distinct)
            + 0.1 * min(1.0, p.words / 3) * text_share,
            f"text, {p.mean_len:.0f} characters on average, {p.distinct:.0%} distinct",
        ),
        "sku": (
            p.code * (0.4 + 0.6 * p.distinct) * (1.0 if p.mean_len <= 20 else 0.5),
            f"{p.code:.0%} code-like values, {p.distinct:.0%} distinct",
        ),
        "unit": (p.unit_words, f"{p.unit_words:.0%} unit words"),
        "currency": (p.currency_codes, f"{p.currency_codes:.0%} currency codes"),
        "quantity": (0.3 * p.numeric * p.integers, f"{p.integers:.0%} whole numbers"),
        "pack_size": (0.2 * p.numeric * p.integers, f"{p.integers:.0%} whole numbers"),
    }
    return {role: (score * fill, why) for role, (score, why) in scores.items()}


def _vetoes(p: Profile) -> dict[str, str]:
    """role -> why the column's values rule it out, whatever its header says: the column
    model's vetoes (``column_model.value_vetoes``), and amounts written with cents are no code."""
    out = dict(p.vetoes)
    if p.cents > MAJORITY:
        out["sku"] = "amounts written with cents, not codes"
    return out


def score_columns(
    profiles: list[Profile], labels: list[str]
) -> dict[tuple[str, int], tuple[float, list[str]]]:
    """(role, column) -> (score, evidence): content plus header words."""
    out: dict[tuple[str, int], tuple[float, list[str]]] = {}
    for p in profiles:
        label = labels[p.col] if p.col < len(labels) else ""
        said = classify_header(label)
        vetoed = _vetoes(p)
        if said and said[0] in vetoed:
            # The values rule out the role the header names (a header moved one column over
            # a merged cell, say): its words say nothing of this column, for any role.
            said = None
        for role, (score, why) in content_scores(p).items():
            if role in vetoed:
                out[(role, p.col)] = (0.0, [f"not {role.replace('_', ' ')}: {vetoed[role]}"])
                continue
            evidence = [why]
            if said and said[0] == role:
                score += HEADER_BONUS[said[1]]
                evidence.insert(0, f"header {label!r} names it")
            elif said:
                score *= 0.6  # the header names another role
            if header_says_not(label, role):
                score *= 0.2
                evidence.append(f"header {label!r} rules it out")
            if p.sequential:
                evidence.append("row numbers")
            out[(role, p.col)] = (score, evidence)
    return out


def _greedy(scores: dict, fixed: dict[str, int | None]) -> dict[str, int]:
    """Highest score first, one column per role; roles in ``fixed`` are not inferred."""
    roles = {r: c for r, c in fixed.items() if c is not None}
    taken = set(roles.values())
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1][0], kv[0][1]))
    for (role, col), (score, _why) in ranked:
        if role in fixed or role in roles or col in taken or score < THRESHOLDS[role]:
            continue
        roles[role] = col
        taken.add(col)
    return roles


def _rescue_price(scores: dict, roles: dict[str, int]) -> dict[str, int]:
    """No price column: give the best numeric column to the price, if a SKU held it."""
    if "unit_price" in roles:
        return roles
    best = max(((s, c) for (r, c), (s, _w) in scores.items() if r == "unit_price"), default=None)
    if best and best[0] >= THRESHOLDS["unit_price"] and roles.get("sku") == best[1]:
        roles = {r: c for r, c in roles.items() if r != "sku"}
        roles["unit_price"] = best[1]
    return roles


def _runner_up(scores: dict, role: str, chosen: int) -> tuple[float, int] | None:
    others = [(s, c) for (r, c), (s, _w) in scores.items() if r == role and c != chosen]
    return max(others, default=None)


def _doubts(
    scores: dict, roles: dict[str, int], labels: list[str]
) -> tuple[list[tuple[str, str]], list[int]]:
    """(the doubts, each as (the item role it puts in doubt, why), the other price columns)."""
    doubts: list[tuple[str, str]] = []
    other_prices: list[int] = []
    price = roles.get("unit_price")
    if price is not None:
        best = scores[("unit_price", price)][0]
        named = _named(cell(labels, price), "unit_price")
        for (r, c), (s, _w) in scores.items():
            if r == "unit_price" and c != price and s >= THRESHOLDS[r] and c not in roles.values():
                other_prices.append(c)
                # Tiers, currencies, with and without tax: when the header names both
                # columns price, its words do not tell which is the item's price (on
                # the 16 development sheets whose header does, the strongest price
                # word stands over the labeled price alone on 1: bench/corpus/vocabulary.py).
                if s >= best - CLOSE_CALL or (named and _named(cell(labels, c), "unit_price")):
                    doubts.append(
                        (
                            "unit_price",
                            f"two plausible price columns: {col_letter(price)} and {col_letter(c)}",
                        )
                    )
    doubts.extend(_close_calls(scores, roles))
    desc = roles.get("description")
    if desc is not None and scores[("description", desc)][0] < WEAK_DESCRIPTION:
        doubts.append(
            ("description", f"the description column {col_letter(desc)} is weak (short or repeated values)")
        )
    for role in ("description", "unit_price", "sku"):
        doubts.extend(_header_disagrees(role, roles, labels))
    if any(labels):
        doubts.extend(_header_silent(roles, labels))
    return doubts, sorted(other_prices)


def _close_calls(scores: dict, roles: dict[str, int]) -> list[tuple[str, str]]:
    """A column that took an item role other than the price by as little as ``CLOSE_CALL`` over
    a free column that could hold it too: a reviewer decides (the price has its own check)."""
    doubts = []
    for role, col in roles.items():
        if role == "unit_price" or role not in ITEM_ROLES:
            continue
        best = scores[(role, col)][0]
        rival = max(
            (
                (s, c)
                for (r, c), (s, _w) in scores.items()
                if r == role and c not in roles.values() and s >= THRESHOLDS[r]
            ),
            default=None,
        )
        if rival and rival[0] >= best - CLOSE_CALL:
            doubts.append(
                (
                    role,
                    f"two plausible {role.replace('_', ' ')} columns: {col_letter(col)} and "
                    f"{col_letter(rival[1])}",
                )
            )
    return doubts


def _named(label: str, role: str) -> bool:
    got = classify_header(label)
    return bool(got) and got[0] == role


def _header_silent(roles: dict[str, int], labels: list[str]) -> list[tuple[str, str]]:
    """A header row that names neither the price column nor a column naming the items."""
    doubts = []
    price = roles.get("unit_price")
    if price is not None and not _named(labels[price] if price < len(labels) else "", "unit_price"):
        doubts.append(
            (
                "unit_price",
                f"the header does not name the price column; column {col_letter(price)} "
                "was taken by its values",
            )
        )
    names = [(r, roles[r]) for r in ("sku", "description") if r in roles]
    if names and not any(_named(labels[c] if c < len(labels) else "", r) for r, c in names):
        why = (
            "the header names no SKU or description column; "
            + " and ".join(f"the {r} from column {col_letter(c)}" for r, c in names)
            + (" were taken by their values" if len(names) > 1 else " was taken by its values")
        )
        doubts += [(r, why) for r, _c in names]
    return doubts


def _best_named(role: str, labels: list[str]) -> list[int]:
    """The columns whose header names ``role`` most strongly, left to right."""
    named = [
        (said[1], c) for c, label in enumerate(labels) if (said := classify_header(label)) and said[0] == role
    ]
    top = max((s for s, _c in named), default=None)
    return [c for s, c in named if s == top]


def _header_disagrees(role: str, roles: dict[str, int], labels: list[str]) -> list[tuple[str, str]]:
    """The column whose header names ``role`` best is not the one the values chose."""
    best_named = _best_named(role, labels)
    if not best_named or role not in roles:
        return []
    chosen = roles[role]
    if chosen in best_named:
        return []
    return [
        (
            role,
            f"the {role.replace('_', ' ')} was taken from column {col_letter(chosen)} by its values, "
            f"although the header of column {col_letter(best_named[0])} ({labels[best_named[0]]!r}) names it",
        )
    ]


def _named_not_taken(roles: dict[str, int], labels: list[str]) -> dict[str, tuple[int, str]]:
    """The SKU or the description, when the header names it and no column was taken for it (the
    values under the word rule it out, hold too little of it, or none): role -> (the column the
    header names, why). A header whose words do not stand over their values (one column off,
    the columns moved) names the wrong column for every role, so what the header names is in
    doubt, and the reviewer is pointed at the column it names."""
    out = {}
    for role in ("sku", "description"):
        if role in roles:
            continue
        if best_named := _best_named(role, labels):
            col = best_named[0]
            out[role] = (
                col,
                f"the header of column {col_letter(col)} ({labels[col]!r}) names the "
                f"{role.replace('_', ' ')}, but no column was taken for it",
            )
    return out


def _confidence(scores: dict, role: str, col: int) -> float:
    score = scores[(role, col)][0]
    runner = _runner_up(scores, role, col)
    margin = score - runner[0] if runner else score
    return max(0.05, min(1.0, score) * min(1.0, 0.5 + margin))


def assign_roles(
    profiles: list[Profile], labels: list[str], fixed: dict[str, int | None] | None = None
) -> Assignment:
    """The best consistent assignment of roles to columns (``fixed`` ones kept as given)."""
    scores = score_columns(profiles, labels)
    roles = _greedy(scores, fixed or {})
    if not fixed:
        roles = _rescue_price(scores, roles)
    found, other_prices = ([], []) if fixed else _doubts(scores, roles, labels)
    doubts = list(dict.fromkeys(why for _role, why in found))
    doubted = {}
    for role, why in found:
        if role in roles and role in ITEM_ROLES:
            doubted.setdefault(role, (roles[role], why))
    if not fixed:
        unheeded = _named_not_taken(roles, labels)
        doubts.extend(why for _col, why in unheeded.values())
        doubted.update(unheeded)
    by_col = {c: r for r, c in roles.items()}
    columns = []
    for p in profiles:
        label = labels[p.col] if p.col < len(labels) else ""
        if not p.filled and not label:
            continue
        role = by_col.get(p.col)
        if role is None:
            columns.append(Column(p.col, label, "other", 1.0, ["no role fits its values and header"]))
        elif fixed and fixed.get(role) == p.col:
            columns.append(Column(p.col, label, role, 1.0, ["set by a reviewer"]))
        else:
            columns.append(
                Column(
                    p.col,
                    label,
                    role,
                    _confidence(scores, role, p.col),
                    scores.get((role, p.col), (0, ["no values"]))[1],
                )
            )
    return Assignment(roles=roles, columns=columns, doubts=doubts, other_prices=other_prices, doubted=doubted)
