"""Units of sale and pack sizes, as written in unit cells and descriptions.

Patterns here run only on short text (a unit cell of at most
``_MAX_UNIT_CHARS``, the tail of a description) and use possessive
quantifiers, so their time is linear in the text they see.
"""

from __future__ import annotations

import re
from decimal import Decimal

from catalog.extraction.text import fold

# Written form (folded, trailing '.' removed) -> normalized unit.
UNIT_SYNONYMS: dict[str, str] = {}
for _norm, _forms in {
    "piece": "each ea pc pcs piece pieces unit st stk stck stück stueck stk. pce pces pièce pièces "
             "pieza piezas pz pezzo pezzi stuk stuks шт штук штука штуки шт. szt sztuka sztuk adet ad "
             "cái chiếc nos no pc. pcs. un und unid unidad unidades ks kus kusů peça peças pç 个 件 個 本",
    "set": "set sets satz kit комплект комп к-т к-та к-тов компл набор zestaw kpl takım takim bộ jeu juego "
           "jg jgo sada conjunto 套",
    "pair": "pair pairs pr paar paire par paio пара пар para çift 双",
    "kg": "kg kgs kilo kilogram kilogramm kilogramme кг kilogramy 公斤 千克",
    "g": "g gr gram grams gramm gramme гр г gm 克",
    "t": "t tonne tonnes ton т тонна",
    "l": "l lt ltr liter litre litres liters л литр litro литр. litr 升",
    "ml": "ml мл",
    "m": "m meter metre meters metres mtr м метр м.п м/п пог.м п.м mb metr metre mt mts metro metros 米",
    "m2": "m2 m² sqm sq m sq.m qm м2 м² кв.м кв м",
    "m3": "m3 m³ cbm м3 м³ куб.м",
    "sq ft": "sq ft sqft ft2",
    "box": "box boxes karton carton cartons ctn schachtel boîte boite caja scatola doos коробка кор короб "
           "pudełko kutu cx caixa 箱",
    "case": "case cases cs kiste caisse",
    "pack": "pack packs pk pkt packung paquet paquete confezione pak pakje упак уп упаковка пачка opak "
            "opakowanie paket pq paq ve vpe pacote balení bal 包",
    "roll": "roll rolls rolle rouleau rollo rotolo rol рулон rolka rulo ro rl",
    "bag": "bag bags beutel sack sac bolsa sacchetto zak мешок пакет worek torba 袋",
    "bottle": "bottle bottles btl flasche bouteille botella bottiglia fles бутылка butelka şişe 瓶",
    "can": "can cans dose boîte de conserve lata банка puszka 罐",
    "bunch": "bunch bund bd botte manojo mazzo bos пучок pęczek demet",
    "hour": "hour hours hr h std stunde heure hora ora uur час ч godz saat hod",
    "service": "service услуга",
    "tube": "tube tubes туба",
    "pot": "pot pots topf töpfe горшок",
    "tray": "tray trays schale steige barquette лоток",
    "portion": "portion portions порция",
    "sheet": "sheet sheets blatt feuille hoja foglio vel лист arkusz",
    "dozen": "dozen dz dtz dutzend douzaine docena dozzina дюжина tuzin",
}.items():
    for _form in _forms.split():
        UNIT_SYNONYMS[fold(_form).rstrip(".")] = _norm
# Written units that do not say what is counted ("ME": Mengeneinheit).
AMBIGUOUS_UNITS = {fold(u) for u in (
    "ед", "ед.", "од", "од.", "units", "unité", "unit.", "einheit", "e", "u", "ue", "x", "me",
)}

_MAX_UNIT_CHARS = 64  # a unit or pack cell is short; longer text is not parsed
_DESC_TAIL_CHARS = 120  # a pack at the end of a description ("454G X12")
_DESC_HEAD_CHARS = 500  # a pack in parentheses ("(24 комп.)")

_CONTAINERS = (
    r"box|boxes|case|cases|carton|ctn|pack|pk|bag|tray|crate|karton|kiste|schachtel|"
    r"colis|caja|scatola|doos|коробка|ящик|упаковка|уп\.?|упак\.?|blister"
)
_PACK_OF = re.compile(
    r"(?P<unit>" + _CONTAINERS + r")\s++(?:of|à|a|de|da|van|по|zu)\s++(?P<n>\d++)", re.I
)
_N_PER = re.compile(
    r"(?P<n>\d++)\s*+(?:pcs?\.?|pieces|шт\.?|st\.?|stk\.?|x)?+\s*+(?:/|per|pro|par|por|в|na)\s*+(?P<unit>"
    + _CONTAINERS + r")\b",
    re.I,
)
_VE = re.compile(r"(?:ve|vpe|pu|pe|pk|pack|уп\.?|упак\.?)\s*+[:.=]?+\s*+(?P<n>\d++)", re.I)
_N_UNIT = re.compile(r"\(?+\s*+(?P<n>\d++)\s*+(?P<unit>[^\W\d][\w\-]*+\.?+)\s*+\)?+")
_COUNT_X_CONTENT = re.compile(
    r"(?P<n>\d++)\s*+[xх×*]\s*+(?P<content>\d++(?:[.,]\d++)?+)\s*+(?P<cu>[^\W\d]++\.?+)?+", re.I
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


def normalize_unit(unit: str | None) -> str | None:
    """The normalized unit of a written one ("Stk." -> "piece"), or None if unknown."""
    if not unit or len(unit) > _MAX_UNIT_CHARS:
        return None
    key = fold(unit).rstrip(".").strip()
    if key in UNIT_SYNONYMS:
        return UNIT_SYNONYMS[key]
    return UNIT_SYNONYMS.get(key.replace(" ", ""))


def unit_ambiguity(unit: str | None, description: str | None) -> str | None:
    """Why ``unit`` is ambiguous for this item, or None.

    A unit that does not say what is counted ("units", "ME") is ambiguous; so
    is "ml" on an item whose text speaks of lengths and not of liquids.
    """
    if not unit:
        return None
    key = fold(unit).rstrip(".").strip()
    if key in AMBIGUOUS_UNITS:
        return "does not say what is counted (piece, kg, box...)"
    if key == "ml":
        text = fold(description or "")[:_DESC_HEAD_CHARS]
        if _LENGTH_CUES.search(text) and not _LIQUID_CUES.search(text):
            return "may be a linear metre (mètre linéaire) here, not a millilitre: the item is sold by length"
    return None


def _number(text: str):
    n = Decimal(text.replace(",", "."))
    return int(n) if n == n.to_integral_value() else float(n)


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
        if normalize_unit(unit) in ("set", "piece", "pack", "box", "pair"):
            return unit, int(m.group("n")), None
    m = _CONTENT_X_COUNT.search(desc.rstrip()[-_DESC_TAIL_CHARS:])
    if not m or int(m.group("n")) <= 1:
        return None, None, None
    n, cu = int(m.group("n")), m.group("cu")
    if cu and (normalize_unit(cu) or fold(cu) in ("gm", "gms", "grm", "kgs", "ltr", "ml")):
        return "case", n, None
    if not cu:
        return "case", n, (
            f"pack {m.group(0).strip()!r}: the content of one unit has no measure "
            "(g? ml?), check the pack size"
        )
    return None, None, None
