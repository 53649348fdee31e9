"""Units of sale and pack sizes, as written in unit cells and descriptions.

Patterns here run only on short text (a unit cell of at most
``_MAX_UNIT_CHARS``, the tail of a description) and use possessive
quantifiers, so their time is linear in the text they see.
"""

from __future__ import annotations

import re
from decimal import Decimal

from catalog.extraction.text import fold
from catalog.units import unit_code, unit_is_ambiguous

# The units themselves (UN/CEFACT Recommendation 20 codes and the words for
# them in every language read) live in ``catalog.units``; only what a pack
# parser needs is named here.
_PACK_UNITS = {"SET", "H87", "PK", "BX", "PR"}  # a count in parentheses: "(24 комп.)"
_CONTENT_UNITS = {"GRM", "KGM", "LTR", "MLT", "CLT", "DLT", "ONZ", "LBR", "MGM"}

_MAX_UNIT_CHARS = 64  # a unit or pack cell is short; longer text is not parsed
_DESC_TAIL_CHARS = 120  # a pack at the end of a description ("454G X12")
_DESC_HEAD_CHARS = 500  # a pack in parentheses ("(24 комп.)")

_CONTAINERS = (
    r"box|boxes|case|cases|carton|ctn|pack|pk|bag|tray|crate|karton|kiste|schachtel|"
    r"colis|caja|scatola|doos|коробка|ящик|упаковка|уп\.?|упак\.?|blister"
)
_PACK_OF = re.compile(r"(?P<unit>" + _CONTAINERS + r")\s++(?:of|à|a|de|da|van|по|zu)\s++(?P<n>\d++)", re.I)
_N_PER = re.compile(
    r"(?<!\d)(?P<n>\d++)\s*+(?:pcs?\.?|pieces|шт\.?|st\.?|stk\.?|x)?+\s*+(?:/|per|pro|par|por|в|na)\s*+(?P<unit>"
    + _CONTAINERS
    + r")\b",
    re.I,
)
_VE = re.compile(r"(?:ve|vpe|pu|pe|pk|pack|уп\.?|упак\.?)\s*+[:.=]?+\s*+(?P<n>\d++)", re.I)
# A match never starts inside a run of spaces or digits (the lookbehinds):
# the leftmost start is the run's first character anyway, and starting at
# every later one would make the search quadratic in the run's length.
_N_UNIT = re.compile(r"\(?+(?<!\s)\s*+(?<!\d)(?P<n>\d++)\s*+(?P<unit>[^\W\d][\w\-]*+\.?+)\s*+\)?+")
_COUNT_X_CONTENT = re.compile(
    r"(?<!\d)(?P<n>\d++)\s*+[xх×*]\s*+(?P<content>\d++(?:[.,]\d++)?+)\s*+(?P<cu>[^\W\d]++\.?+)?+", re.I
)
_CONTENT_X_COUNT = re.compile(
    r"(?<![\d.,])(?P<content>\d++(?:[.,]\d++)?+)\s*+(?P<cu>[^\W\d]++)?+\s*+[xх×]\s*+(?P<n>\d++)\s*+$", re.I
)
_PAREN_COUNT = re.compile(r"\(\s*+(?P<n>\d++)\s*+(?P<unit>[^\W\d][\w\-]*+\.?+)\s*+\)")
_DESC_PACK_HINT = re.compile(r"[xх×(]|of|/", re.I)
# "ml" is a millilitre for liquids but a linear metre (mètre linéaire) for lengths.
_LENGTH_CUES = re.compile(
    r"(?<![\w])(?:plinthe|baguette|moulure|profil\w*+|tube|tuyau|cable|cable|barre|rail|corniche|tringle|"
    r"lambris|skirting|longueur|lineaire|linear|metre|gaine|goulotte|chemin|bordure|\d++\s*+(?:mm|cm|m))(?![\w])"
)
_LIQUID_CUES = re.compile(
    r"(?<![\w])(?:bouteille|flacon|bottle|liquide|liquid|huile|oil|sirop|jus|juice|vin|wine|biere|beer|"
    r"eau|water|creme|shampo\w*+|lait|milk|parfum|spray|gel)(?![\w])"
)


_CONTENT_CELL = re.compile(r"(?P<n>\d{1,9}+(?:[.,]\d{1,6}+)?+)\s*+(?P<unit>[^\W\d]{1,6}+\.?+)")
# A content unit in its base (kilograms, litres) and what one of it is in that base.
_CONTENT_BASE = {
    "KGM": ("KGM", 1),
    "GRM": ("KGM", 1000),
    "MGM": ("KGM", 1_000_000),
    "LTR": ("LTR", 1),
    "DLT": ("LTR", 10),
    "CLT": ("LTR", 100),
    "MLT": ("LTR", 1000),
    "ONZ": ("ONZ", 1),
    "LBR": ("LBR", 1),
}


def content_amount(text: str) -> tuple[str, Decimal] | None:
    """What a cell says one item holds ("0.75 l", "500 g", "0,30 kg"): (the base unit's code,
    the amount in it: kilograms, litres, ounces or pounds), or None."""
    m = _CONTENT_CELL.fullmatch((text or "").strip())
    base = m and _CONTENT_BASE.get(normalize_unit(m.group("unit")) or "")
    if not base:
        return None
    amount = Decimal(m.group("n").replace(",", ".")) / base[1]
    return (base[0], amount) if amount > 0 else None


def normalize_unit(unit: str | None) -> str | None:
    """The Recommendation 20 code of a written unit ("Stk." -> "H87"), or None if unknown."""
    if not unit or len(unit) > _MAX_UNIT_CHARS:
        return None
    return unit_code(unit)


def unit_ambiguity(unit: str | None, description: str | None) -> str | None:
    """Why ``unit`` is ambiguous for this item, or None.

    A unit that does not say what is counted ("units", "ME") is ambiguous; so
    is "ml" on an item whose text speaks of lengths and not of liquids.
    """
    if not unit:
        return None
    if len(unit) > _MAX_UNIT_CHARS:
        return None
    if unit_is_ambiguous(unit):
        return "does not say what is counted (piece, kg, box...)"
    if unit_code(unit) == "MLT" and fold(unit).rstrip(".") == "ml":
        text = fold(description or "")[:_DESC_HEAD_CHARS]
        if _LENGTH_CUES.search(text) and not _LIQUID_CUES.search(text):
            return "may be a linear metre (mètre linéaire) here, not a millilitre: the item is sold by length"
    return None


def _split_patterns(t: str) -> tuple[str | None, int | None] | None:
    m = _PACK_OF.fullmatch(t) or _PACK_OF.match(t)
    if m:
        return m.group("unit"), int(m.group("n"))
    m = _N_PER.match(t)
    if m:
        return m.group("unit"), int(m.group("n"))
    m = _VE.fullmatch(t)
    if m:
        return None, int(m.group("n"))
    m = _COUNT_X_CONTENT.fullmatch(t)
    if m and m.group("cu"):
        return None, int(m.group("n"))
    m = _CONTENT_X_COUNT.search(t)
    if m and m.start() == 0:
        return None, int(m.group("n"))
    m = _N_UNIT.fullmatch(t)
    if m and normalize_unit(m.group("unit")):
        return m.group("unit"), int(m.group("n"))
    return None


def split_pack(text: str) -> tuple[str | None, int | float | None]:
    """Split a unit cell into (unit, pack size).

    "box of 12" -> ("box", 12); "12/case" -> ("case", 12); "VE 10" -> (None, 10);
    "24 шт" -> ("шт", 24); "12 x 1 kg" -> (None, 12); "kg" -> ("kg", None);
    "12" -> (None, 12). Anything else comes back as (text, None), so an
    unknown unit is kept as written and validation flags it.
    """
    t = (text or "").strip()
    if not t:
        return None, None
    if len(t) > _MAX_UNIT_CHARS:
        return t, None
    got = _split_patterns(t)
    if got is not None:
        return got
    if t.isdigit():
        return None, int(t)
    return t, None


def pack_in_description(desc: str) -> tuple[str | None, int | None, str | None]:
    """A pack size written inside a description: (unit, count, doubt or None).

    "R1 a/Ø28i (24 комп.)" -> ("комп.", 24, None); "BANANA ROAST 454G X12" ->
    ("case", 12, None); "CHEERATHORAN 350 X 12" -> ("case", 12, "<doubt>").
    Sizes that describe the product ("100 LİTRE", "2KG") are not packs.
    """
    if not desc or not _DESC_PACK_HINT.search(desc[:_DESC_HEAD_CHARS]):
        return None, None, None
    for m in _PAREN_COUNT.finditer(desc[:_DESC_HEAD_CHARS]):
        unit = m.group("unit")
        if normalize_unit(unit) in _PACK_UNITS:
            return unit, int(m.group("n")), None
    m = _CONTENT_X_COUNT.search(desc.rstrip()[-_DESC_TAIL_CHARS:])
    if not m or int(m.group("n")) <= 1:
        return None, None, None
    n, cu = int(m.group("n")), m.group("cu")
    if cu and (normalize_unit(cu) in _CONTENT_UNITS or fold(cu) in ("gms", "grms")):
        return "case", n, None
    if not cu:
        return (
            "case",
            n,
            (
                f"pack {m.group(0).strip()!r}: the content of one unit has no measure "
                "(g? ml?), check the pack size"
            ),
        )
    return None, None, None
