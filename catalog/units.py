"""Units of sale, normalized to UN/CEFACT Recommendation 20 codes.

Source of the codes and names: UN/CEFACT Recommendation No. 20, "Codes for
Units of Measure Used in International Trade", Revision 17 (2021), Annex I
(units of measure) and Annexes II/III (which carry the package codes of
Recommendation No. 21, e.g. BX box, BO bottle). Only the units price lists
sell by are listed here, each with the words and abbreviations used for it in
the languages the extractor reads (English, German, French, Spanish,
Italian, Dutch, Portuguese, Czech, Polish, Russian, Ukrainian, Turkish,
Chinese, Japanese).

Pure functions over strings: no ORM, no Django.

    >>> unit_normalize("Stück")
    ('H87', [])
    >>> unit_normalize("boxx")[0] is None and "BX" in unit_normalize("boxx")[1]
    True
"""

import difflib
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

SOURCE = (
    "UN/CEFACT Recommendation No. 20, Codes for Units of Measure Used in "
    "International Trade, Revision 17 (2021)"
)
CANDIDATE_COUNT = 3


@dataclass(frozen=True)
class Unit:
    code: str  # the Recommendation 20 common code
    name: str  # its name in Recommendation 20
    short: str  # how the project writes it (suggestions, exports)
    forms: tuple[str, ...]  # words and abbreviations that mean it


def _u(code: str, name: str, short: str, forms: str) -> Unit:
    return Unit(code, name, short, tuple(forms.split("|")))


# One row per unit of sale. Forms are separated by "|" (some contain spaces);
# they are matched after folding (case, accents, dots and spaces ignored), so
# "Stk.", "STK" and "stk" are one form.
UNITS: tuple[Unit, ...] = (
    # --- counted items
    _u(
        "H87",
        "piece",
        "piece",
        "piece|pieces|pc|pcs|pce|pces|each|ea|unit|item|items|nos|no"
        "|stück|stueck|stuck|stk|stck|st|stg"  # German
        "|pièce|pièces|pc|pcs"  # French
        "|pieza|piezas|pza|pzas|unidad|unidades|un|und|ud|uds"  # Spanish
        "|pezzo|pezzi|pz|nr"  # Italian
        "|stuk|stuks"  # Dutch
        "|peça|peças|pç|unidade|unidades"  # Portuguese
        "|ks|kus|kusy|kusů"  # Czech
        "|szt|sztuka|sztuki|sztuk"  # Polish
        "|шт|штука|штуки|штук"  # Russian, Ukrainian
        "|adet|ad"  # Turkish
        "|个|個|件|只|支|台|本|枚",
    ),  # Chinese, Japanese
    _u("C62", "one", "one", "one|c62"),
    _u(
        "PR",
        "pair",
        "pair",
        "pair|pairs|pr|paar|paire|par|pares|paio|paia|pár|para|пара|пар|çift|cift|对|對|双|雙|足",
    ),
    _u(
        "SET",
        "set",
        "set",
        "set|sets|satz|jeu|juego|jg|jogo|sada|komplet|kpl|zestaw|комплект|компл|комп|к-т|набор"
        "|takım|takim|套|セット|組|组",
    ),
    _u("KT", "kit", "kit", "kit|kits|bausatz"),
    _u(
        "DZN",
        "dozen",
        "dozen",
        "dozen|dz|dzn|dtzd|dutzend|douzaine|docena|dozzina|dúzia|tucet|tuzin|дюжина|düzine|打|ダース",
    ),
    _u("LO", "lot [unit of procurement]", "lot", "lot|lots|lote|los|partie|式|一式"),
    _u("E48", "service unit", "service", "service|services|leistung|услуга|hizmet"),
    # --- containers and packages (Recommendation 21 codes in Annexes II/III)
    _u(
        "BX",
        "box",
        "box",
        "box|boxes|bx|schachtel|boîte|boite|caja|cj|scatola|doos|caixa|cx"
        "|krabice|pudełko|коробка|кор|короб|kutu|盒|箱",
    ),
    _u("CS", "case", "case", "case|cases|cs|kiste|caisse|estuche|ケース"),
    _u("CT", "carton", "carton", "carton|cartons|ctn|karton|cartone|cartón|kartonnen|koli|картон"),
    _u(
        "PK",
        "pack",
        "pack",
        "pack|packs|pk|pkt|packung|pckg|ve|vpe|verpackungseinheit|paquet|paquete|pq"
        "|confezione|conf|pak|pakje|pacote|pct|balení|bal|opakowanie|opak|op"
        "|упаковка|упак|уп|пачка|paket|包|パック",
    ),
    _u("PA", "packet", "packet", "packet|packets|päckchen|sachet"),
    _u(
        "RO",
        "roll",
        "roll",
        "roll|rolls|rolle|rollen|rouleau|rollo|ro|rotolo|rol|rolo|role|rolka|рулон|rulo|卷|巻|ロール",
    ),
    _u(
        "BG",
        "bag",
        "bag",
        "bag|bags|beutel|tüte|sac|bolsa|sacchetto|busta|zak|saco|sáček|torba|мешок|мішок|пакет|torba|袋",
    ),
    _u("SA", "sack", "sack", "sack|sacks|säcke|sacco|worek|çuval|cuval"),
    _u(
        "BO",
        "bottle",
        "bottle",
        "bottle|bottles|btl|flasche|fl|bouteille|botella|bottiglia|fles|garrafa|láhev"
        "|butelka|бутылка|пляшка|şişe|sise|瓶|ボトル|ビン",
    ),
    _u("CA", "can", "can", "can|cans|dose|lata|lattina|blik|plechovka|puszka|банка|teneke|罐|缶"),
    _u("TN", "tin", "tin", "tin|tins|boîte de conserve"),
    _u(
        "JR",
        "jar",
        "jar",
        "jar|jars|glas|pot|pots|bocal|frasco|tarro|barattolo|vasetto|pot glas|pote"
        "|sklenice|słoik|слоик|kavanoz",
    ),
    _u("TU", "tube", "tube", "tube|tubes|tubo|tubetto|tuba|туба|tüp"),
    _u("PU", "tray", "tray", "tray|trays|schale|steige|barquette|bandeja|vaschetta|лоток"),
    _u("BJ", "bucket", "bucket", "bucket|buckets|eimer|seau|cubo|secchio|emmer|wiadro|ведро|kova"),
    _u(
        "BE",
        "bundle",
        "bundle",
        "bundle|bundles|bunch|bunches|bund|bd|botte|fagot|manojo|fascio|mazzo|bos|svazek|пучок"
        "|pęczek|demet|束|把",
    ),
    _u("CR", "crate", "crate", "crate|crates|harass|cajón|cassa|krat|skrzynka|ящик|kasa"),
    _u(
        "ST",
        "sheet",
        "sheet",
        "sheet|sheets|blatt|bogen|feuille|hoja|foglio|vel|folha|arch|arkusz|лист|yaprak|张|張",
    ),
    _u("PTN", "portion", "portion", "portion|portions|porción|porzione|porcja|порция|porsiyon|份"),
    # --- mass
    _u(
        "KGM",
        "kilogram",
        "kg",
        "kg|kgs|kilo|kilos|kilogram|kilograms|kilogramm|kilogramme|kilogramo|chilogrammo"
        "|kilogramy|quilo|кг|килограмм|公斤|千克|キロ|キログラム|㎏",
    ),
    _u(
        "GRM",
        "gram",
        "g",
        "g|gr|grs|gm|gram|grams|gramm|gramme|gramo|grammo|grama|gramy|г|гр|грамм|克|グラム",
    ),
    _u("MGM", "milligram", "mg", "mg|milligram|milligramm|мг"),
    _u(
        "TNE",
        "tonne (metric ton)",
        "t",
        "t|tonne|tonnes|ton|tons|tonelada|tonnellata|tuna|т|тонна|ton|吨|トン",
    ),
    _u("LBR", "pound", "lb", "lb|lbs|pound|pounds"),
    _u("ONZ", "ounce", "oz", "oz|ounce|ounces"),
    # --- volume
    _u("LTR", "litre", "l", "l|lt|ltr|liter|litre|litres|liters|litro|litri|litr|litry|л|литр|升|リットル|ℓ"),
    _u("MLT", "millilitre", "ml", "ml|millilitre|milliliter|mililitro|millilitro|мл|毫升|ミリリットル|㎖"),
    _u("CLT", "centilitre", "cl", "cl|centilitre|centiliter"),
    _u("GLL", "gallon (US)", "gal", "gal|gallon|gallons"),
    _u(
        "MTQ",
        "cubic metre",
        "m3",
        "m3|cbm|cu m|cubic metre|cubic meter|kubikmeter|mc|metro cubo|metro cúbico|m3"
        "|куб м|кубм|м3|立方米|立米|立方メートル|㎥",
    ),
    # --- length and area
    _u(
        "MTR",
        "metre",
        "m",
        "m|meter|metre|meters|metres|mtr|mtrs|mt|metro|metri|metros|metr|metry|metre|м|метр|米|メートル",
    ),
    _u(
        "LM",
        "linear metre",
        "lm",
        "lm|linear metre|linear meter|running metre|running meter|lfm|lfd m|laufmeter"
        "|laufender meter|mètre linéaire|metro lineal|metro lineare|strekkende meter|bm"
        "|běžný metr|mb|metr bieżący|пог м|погм|пм|мп|пог метр|延长米|延米",
    ),
    _u("CMT", "centimetre", "cm", "cm|centimetre|centimeter|zentimeter|см|厘米|センチ"),
    _u("MMT", "millimetre", "mm", "mm|millimetre|millimeter|мм|毫米|ミリ"),
    _u("FOT", "foot", "ft", "ft|foot|feet"),
    _u("INH", "inch", "in", "in|inch|inches|zoll"),
    _u("YRD", "yard", "yd", "yd|yard|yards"),
    _u(
        "MTK",
        "square metre",
        "m2",
        "m2|sqm|sq m|square metre|square meter|qm|quadratmeter|mq|metro cuadrado"
        "|metro quadrato|mètre carré|кв м|квм|м2|平方米|平米|平方メートル|㎡",
    ),
    _u("FTK", "square foot", "sq ft", "sq ft|sqft|ft2|square foot|square feet"),
    # --- time
    _u("MIN", "minute", "min", "min|minute|minutes|minuto|minuta|минута|мин|分钟"),
    _u(
        "HUR",
        "hour",
        "h",
        "h|hr|hrs|hour|hours|std|stunde|stunden|heure|heures|hora|horas|ora|ore|uur"
        "|hod|hodina|godz|godzina|час|ч|година|год|saat|小时|時間",
    ),
    _u(
        "DAY",
        "day",
        "day",
        "day|days|tag|tage|jour|jours|día|dia|días|giorno|giorni|dag|dagen|den|dzień|doba"
        "|день|сут|сутки|gün|gun|天|日",
    ),
    _u("WEE", "week", "week", "week|weeks|wk|woche|semaine|semana|settimana|tydzień|неделя|hafta"),
    _u("MON", "month", "month", "month|months|mo|monat|mois|mes|mese|měsíc|miesiąc|месяц|ay|月"),
    _u("ANN", "year", "year", "year|years|yr|jahr|año|anno|ano|rok|yıl|年"),
)

# Written units that do not say what is counted ("unit", "ME" for
# Mengeneinheit): known words, but a reviewer must say what one price buys.
AMBIGUOUS = "units|ед|од|unité|einheit|einheiten|me|mengeneinheit|e|u|ue|x|eh"

# "per kg", "pro Stück", "/kg": the unit after the word or slash.
# What an ambiguous unit most often stands for.
AMBIGUOUS_CANDIDATES = ("H87", "PK", "SET")

_PREFIX = re.compile(r"^(?:(?:per|pro|je|par|por|за)\s+|/\s*)", re.I)


def _fold(text: str) -> str:
    """Compatibility forms (㎏, full-width letters) decomposed, case and
    accents dropped, dots and spaces removed: the key a form is matched by."""
    text = unicodedata.normalize("NFKC", text)
    text = unicodedata.normalize("NFKD", text.casefold())
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return re.sub(r"[\s.]+", "", text.replace("ı", "i"))


def _build() -> tuple[dict[str, str], dict[str, Unit], frozenset[str]]:
    by_form: dict[str, str] = {}
    for unit in UNITS:
        for form in (unit.code, unit.short, unit.name, *unit.forms):
            key = _fold(form)
            # The first row that names a form keeps it (pieces before
            # packages, packages before measures), so each form means one code.
            by_form.setdefault(key, unit.code)
    by_code = {unit.code: unit for unit in UNITS}
    ambiguous = frozenset(_fold(form) for form in AMBIGUOUS.split("|"))
    for key in ambiguous:
        by_form.pop(key, None)
    return by_form, by_code, ambiguous


_BY_FORM, _BY_CODE, _AMBIGUOUS = _build()


@lru_cache(maxsize=4096)
def _key(text: str) -> str:
    # A sheet writes a few unit words thousands of times: each is folded once.
    return _fold(_PREFIX.sub("", text.strip()))


def unit_code(text: str | None) -> str | None:
    """unit_normalize(text)[0] without looking for the nearest known units
    (a fuzzy match over every form): what extraction asks of every cell."""
    if not text or not text.strip():
        return None
    key = _key(text)
    return None if key in _AMBIGUOUS else _BY_FORM.get(key)


def unit_normalize(text: str | None) -> tuple[str | None, list[str]]:
    """(the Recommendation 20 code of a written unit, []) when it is known;
    (None, up to three codes of the nearest known units) when it is not.
    "per kg" and "/kg" read as "kg"; an ambiguous unit ("units", "ME") has
    no code."""
    if not text or not text.strip():
        return None, []
    key = _key(text)
    if key in _AMBIGUOUS:
        return None, list(AMBIGUOUS_CANDIDATES)
    code, nearest = _normalize_key(key)
    return code, list(nearest)


@lru_cache(maxsize=4096)
def _normalize_key(key: str) -> tuple[str | None, tuple[str, ...]]:
    code = _BY_FORM.get(key)
    if code is not None:
        return code, ()
    return None, tuple(_nearest(key))


def _nearest(key: str) -> list[str]:
    if not key:
        return []
    found: list[str] = []
    for form in difflib.get_close_matches(key, list(_BY_FORM), n=12, cutoff=0.5):
        code = _BY_FORM[form]
        if code not in found:
            found.append(code)
        if len(found) == CANDIDATE_COUNT:
            break
    return found


def unit_is_ambiguous(text: str | None) -> bool:
    """True for a word that is a unit but does not say what is counted."""
    return bool(text) and _key(text) in _AMBIGUOUS


def unit_label(code: str) -> str:
    """ "box (BX)": how a code is shown to a person."""
    unit = _BY_CODE.get(code)
    return f"{unit.short} ({code})" if unit else code


def unit_choices() -> list[tuple[str, str]]:
    """(value to type, label) for every unit, for suggestion lists."""
    return [(unit.short, f"{unit.name} ({unit.code})") for unit in UNITS]
