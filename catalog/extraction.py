"""The built-in extractor: deterministic, offline, the default.

It finds the header row under title rows, maps columns by their names in
several languages, reads the price as a decimal (every European and US
separator style), takes the currency from the price cell, its number format,
the price header, a sibling header or a title note (in that order), and
never invents one. What it is unsure of is left null and flagged, never
guessed silently.

Items follow the contract's item schema. An item may already carry
``"flags"`` for doubts only the extractor can see (an ambiguous "$", a pack
with no measure); ``catalog.validation.validate_items`` keeps them and adds
its own.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from catalog.errors import NotAnItemList
from catalog.reading import Sheet, Table

HEADER_SCAN_ROWS = 50

MSG_NO_HEADER = (
    "no header row with a price column and a SKU or description column found "
    "in the first {n} rows of any sheet: this looks like a price matrix, a "
    "rate card or a form, not an item list"
)
MSG_EMPTY_TABLE = "the file holds no cells at all: there is no item list to read"
MSG_NO_ITEMS = "a header row was found but no row below it has a price: {details}"


@dataclass(frozen=True)
class Extraction:
    items: list[dict]
    notes: list[str]


# ---------------------------------------------------------------- folding


_FOLD_CACHE: dict[str, str] = {}


def fold(text: str) -> str:
    """Lower-case, accents removed, '_' and runs of space collapsed."""
    cached = _FOLD_CACHE.get(text)
    if cached is not None:
        return cached
    decomposed = unicodedata.normalize("NFKD", text)
    out = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    out = re.sub(r"[\s_]+", " ", out.casefold().replace("ı", "i")).strip()
    if len(_FOLD_CACHE) < 50_000:
        _FOLD_CACHE[text] = out
    return out


def _phrase_regex(phrases) -> re.Pattern:
    alts = sorted({re.escape(fold(p)) for p in phrases}, key=len, reverse=True)
    return re.compile(r"(?<![\w])(?:" + "|".join(alts) + r")(?![\w])")


# ---------------------------------------------------------------- currency

# Symbols that name exactly one currency.
_SYMBOLS = {
    "€": "EUR", "£": "GBP", "₽": "RUB", "₴": "UAH", "₹": "INR", "₸": "KZT",
    "₺": "TRY", "₱": "PHP", "₫": "VND", "₩": "KRW", "₪": "ILS", "₦": "NGN",
    "US$": "USD", "C$": "CAD", "CA$": "CAD", "A$": "AUD", "AU$": "AUD",
    "NZ$": "NZD", "R$": "BRL", "HK$": "HKD", "S$": "SGD",
}
_SYMBOL_RE = re.compile(
    "|".join(re.escape(s) for s in sorted(_SYMBOLS, key=len, reverse=True))
)
# Symbols that do not say which currency: noted, never resolved.
AMBIGUOUS_SYMBOLS = ("$", "¥", "kr")
_ISO_CODES = (
    "USD EUR GBP CHF CAD AUD NZD JPY CNY RUB RUR UAH BYN KZT PLN CZK HUF RON "
    "BGN SEK NOK DKK ISK TRY INR PKR LKR BDT NPR IDR MYR SGD HKD THB VND PHP "
    "KRW ZAR BRL MXN ARS CLP COP AED SAR ILS EGP NGN KES UZS GEL AMD AZN MDL RSD"
).split()
_ISO_RE = re.compile(r"(?<![A-Za-z])(" + "|".join(_ISO_CODES) + r"|RMB)(?![A-Za-z])")
_ISO_ALIASES = {"RUR": "RUB", "RMB": "CNY"}
# Words (matched on folded text, whole words) that name one currency.
_WORDS = {
    "eur": "EUR", "euro": "EUR", "euros": "EUR", "евро": "EUR", "євро": "EUR",
    "usd": "USD", "gbp": "GBP", "chf": "CHF", "pln": "PLN", "uah": "UAH", "kzt": "KZT",
    "czk": "CZK", "inr": "INR", "zar": "ZAR",
    "руб": "RUB", "руб.": "RUB", "рубли": "RUB", "рублей": "RUB", "рубль": "RUB",
    "рублях": "RUB", "рубля": "RUB", "rub.": "RUB",
    "грн": "UAH", "грн.": "UAH", "гривна": "UAH", "гривень": "UAH", "гривні": "UAH",
    "гривен": "UAH", "гривнях": "UAH",
    "тг": "KZT", "тенге": "KZT", "теңге": "KZT",
    "zł": "PLN", "zl": "PLN", "złotych": "PLN", "zlotych": "PLN", "złoty": "PLN",
    "долл": "USD", "долл.": "USD", "доллар": "USD", "долларов": "USD", "доларів": "USD",
    "kč": "CZK", "lei": "RON", "лв": "BGN", "лв.": "BGN", "rupees": "INR",
}
_WORD_RE = re.compile(
    r"(?<![\w])("
    + "|".join(re.escape(w) for w in sorted(_WORDS, key=len, reverse=True))
    + r")(?![\w])"
)
# Abbreviations that are currencies only right after an amount: "100р.", "6,31руб", "50 TL".
_AFTER_AMOUNT_RE = re.compile(r"\d\s?(р\.?|руб|TL|Ft|Kč|zł|грн)(?![\w])")
_AFTER_AMOUNT = {"р": "RUB", "р.": "RUB", "руб": "RUB", "TL": "TRY", "Ft": "HUF",
                 "Kč": "CZK", "zł": "PLN", "грн": "UAH"}
_PLAIN_NUMBER_RE = re.compile(r"^[\d\s.,'’\-+()%/]*$")


def find_currencies(text: str) -> set[str]:
    """Every currency named in ``text`` by symbol, ISO code or word."""
    if not text or _PLAIN_NUMBER_RE.match(text):
        return set()
    found = {_SYMBOLS[m] for m in _SYMBOL_RE.findall(text)}
    found.update(_ISO_ALIASES.get(m, m) for m in _ISO_RE.findall(text))
    found.update(_AFTER_AMOUNT[m] for m in _AFTER_AMOUNT_RE.findall(text))
    folded = fold(text)
    found.update(_WORDS[m] for m in _WORD_RE.findall(folded))
    return found


def detect_currency(text: str) -> str | None:
    """The one currency ``text`` names, or None (none, or more than one)."""
    found = find_currencies(text)
    return found.pop() if len(found) == 1 else None


_AMBIGUOUS_RE = re.compile(r"(?<![A-Za-z])(\$|¥|kr)(?![A-Za-z])")


def ambiguous_currency_symbol(text: str) -> str | None:
    """A currency symbol in ``text`` that does not say which currency ("$")."""
    if not text:
        return None
    m = _AMBIGUOUS_RE.search(_SYMBOL_RE.sub("", text))
    return m.group(1) if m else None


# ---------------------------------------------------------------- numbers

_FAST_DECIMAL = re.compile(r"^-?\d+(?:\.\d+)?$")
_SPACES_RE = re.compile(r"[\s\u00a0\u202f\u2009\u2007]+")
_GROUP_RE = re.compile(r"^\d{3}$")
_LAST_GROUP_RE = re.compile(r"^\d{3}(?:[.,]\d+)?$")
_NUMBER_BODY = re.compile(r"^[+-]?\d[\d.,]*$")
_CURRENCY_AFFIX = re.compile(
    r"^(?:[A-Z]{3}|[€£₽₴₹₸₺₱₫₩$¥]|US\$|руб\.?|р\.?|грн\.?|тг|zł|zl|kr|Kč|TL|Ft|Rs\.?|lei)",
)
_CURRENCY_SUFFIX = re.compile(
    r"(?:[A-Z]{3}|[€£₽₴₹₸₺₱₫₩$¥]|руб\.?|р\.?|грн\.?|тг|zł|zl|kr|Kč|TL|Ft|lei|,-|\.-|,—|\.—)$",
)


def parse_decimal(text: str, decimal: str | None = None) -> Decimal | None:
    """Parse a price as written: "1.234,50", "1,234.50", "1 234,50", "1'234.50", "€ 12".

    ``decimal`` (',' or '.') settles the one truly ambiguous form, a single
    separator followed by exactly three digits ("1.234", "1,234"); without it
    "1,234" is read as thousands (US) and "1.234" as a decimal point.
    Returns None for anything that is not just a number (with an optional
    currency): "от 1 500", "90/pc", "enquire".
    """
    if not text:
        return None
    if _FAST_DECIMAL.match(text) and (decimal != "," or "." not in text):
        return Decimal(text)
    s = text.strip()
    negative = False
    if s.startswith("(") and s.endswith(")"):
        negative, s = True, s[1:-1].strip()
    # Currency before or after the number, possibly with a space.
    for _ in range(2):
        m = _CURRENCY_AFFIX.match(s)
        if m and m.end() < len(s):
            s = s[m.end():].strip()
        m = _CURRENCY_SUFFIX.search(s)
        if m and m.start() > 0:
            s = s[: m.start()].strip()
    if s.startswith("-") or s.startswith("−"):
        negative, s = not negative, s[1:].strip()
    elif s.startswith("+"):
        s = s[1:].strip()
    s = _SPACES_RE.sub(" ", s).replace("’", "'").replace("`", "'")
    for ch in (" ", "'"):
        if ch in s:
            # Spaces and apostrophes separate thousands only between digit
            # groups of three ("1 234,50", "1'234.50"); "12 5" is not a number.
            parts = s.split(ch)
            if not (parts[0].isdigit() and len(parts[0]) <= 3):
                return None
            if not all(_GROUP_RE.match(p) for p in parts[1:-1]) or not _LAST_GROUP_RE.match(parts[-1]):
                return None
            s = "".join(parts)
    if not _NUMBER_BODY.match(s):
        return None
    dots, commas = s.count("."), s.count(",")
    if dots and commas:
        dec = "." if s.rfind(".") > s.rfind(",") else ","
        thousands = "," if dec == "." else "."
        if s.count(dec) != 1:
            return None
        int_part, frac = s.split(dec)
        if not _valid_grouping(int_part, thousands):
            return None
        s = int_part.replace(thousands, "") + "." + frac
    elif dots or commas:
        sep = "." if dots else ","
        groups = s.split(sep)
        if len(groups) > 2:
            if not _valid_grouping(s, sep):
                return None
            s = s.replace(sep, "")
        else:
            int_part, frac = groups
            if not int_part or not frac:
                return None
            if len(frac) == 3 and int_part != "0" and not int_part.startswith("0"):
                chosen = decimal or ("." if sep == "." else "")
                if chosen == sep:
                    s = int_part + "." + frac
                else:
                    s = int_part + frac
            else:
                s = int_part + "." + frac
    try:
        value = Decimal(s)
    except InvalidOperation:
        return None
    if not value.is_finite():
        return None
    return -value if negative else value


def _valid_grouping(int_part: str, sep: str) -> bool:
    groups = int_part.split(sep)
    if len(groups) == 1:
        return groups[0].isdigit()
    return (
        1 <= len(groups[0]) <= 3
        and groups[0].isdigit()
        and all(len(g) == 3 and g.isdigit() for g in groups[1:])
    )


def canonical_decimal(value: Decimal) -> str:
    """'5.26000' -> '5.26', '494.00' -> '494', never an exponent."""
    text = format(value.normalize(), "f")
    return text


# ------------------------------------------------------------------- units

# Written form (folded, trailing '.' removed) -> normalized unit.
UNIT_SYNONYMS: dict[str, str] = {}
for _norm, _forms in {
    "piece": "each ea pc pcs piece pieces unit st stk stck stück stueck stk. pce pces pièce pièces "
             "pieza piezas pz pezzo pezzi stuk stuks шт штук штука штуки шт. szt sztuka sztuk adet ad "
             "cái chiếc nos no pc. pcs.",
    "set": "set sets satz kit комплект комп к-т к-та к-тов компл набор zestaw kpl takım takim bộ jeu juego",
    "pair": "pair pairs pr paar paire par paio пара пар para çift",
    "kg": "kg kgs kilo kilogram kilogramm kilogramme кг kilogramy",
    "g": "g gr gram grams gramm gramme гр г gm",
    "t": "t tonne tonnes ton т тонна",
    "l": "l lt ltr liter litre litres liters л литр litro литр. litr",
    "ml": "ml мл",
    "m": "m meter metre meters metres mtr м метр м.п м/п пог.м п.м mb metr metre",
    "m2": "m2 m² sqm sq m sq.m qm м2 м² кв.м кв м",
    "m3": "m3 m³ cbm м3 м³ куб.м",
    "sq ft": "sq ft sqft ft2",
    "box": "box boxes karton carton cartons ctn schachtel boîte boite caja scatola doos коробка кор короб pudełko kutu",
    "case": "case cases cs kiste caisse",
    "pack": "pack packs pk pkt packung paquet paquete confezione pak pakje упак уп упаковка пачка opak opakowanie paket",
    "roll": "roll rolls rolle rouleau rollo rotolo rol рулон rolka rulo",
    "bag": "bag bags beutel sack sac bolsa sacchetto zak мешок пакет worek torba",
    "bottle": "bottle bottles btl flasche bouteille botella bottiglia fles бутылка butelka şişe",
    "can": "can cans dose boîte de conserve lata банка puszka",
    "bunch": "bunch bund bd botte manojo mazzo bos пучок pęczek demet",
    "hour": "hour hours hr h std stunde heure hora ora uur час ч godz saat",
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
# Written units that do not say what is counted.
AMBIGUOUS_UNITS = {fold(u) for u in ("ед", "ед.", "од", "од.", "units", "unité", "unit.", "einheit", "e", "u", "ue", "x")}
_UNIT_WORDS_RE = re.compile(
    r"(?<![\w])("
    + "|".join(re.escape(u) for u in sorted(UNIT_SYNONYMS, key=len, reverse=True))
    + r")\.?(?![\w])"
)


def normalize_unit(unit: str | None) -> str | None:
    """The normalized unit of a written one ("Stk." -> "piece"), or None if unknown."""
    if not unit:
        return None
    key = fold(unit).rstrip(".").strip()
    if key in UNIT_SYNONYMS:
        return UNIT_SYNONYMS[key]
    key = key.replace(" ", "")
    return UNIT_SYNONYMS.get(key)


# -------------------------------------------------------------- pack sizes

_CONTAINERS = (
    r"box|boxes|case|cases|carton|ctn|pack|pk|bag|tray|crate|karton|kiste|schachtel|"
    r"colis|carton|caja|scatola|doos|коробка|ящик|упаковка|уп\.?|упак\.?|blister"
)
_PACK_OF = re.compile(
    r"^(?P<unit>" + _CONTAINERS + r")\s+(?:of|à|a|de|da|van|по|zu)\s+(?P<n>\d+)", re.I
)
_N_PER = re.compile(
    r"^(?P<n>\d+)\s*(?:pcs?\.?|pieces|шт\.?|st\.?|stk\.?|x)?\s*(?:/|per|pro|par|por|в|na)\s*(?P<unit>"
    + _CONTAINERS + r")\b",
    re.I,
)
_VE = re.compile(r"^(?:ve|vpe|pu|pe|pk|pack|уп\.?|упак\.?)\s*[:.=]?\s*(?P<n>\d+)$", re.I)
_N_UNIT = re.compile(r"^\(?\s*(?P<n>\d+)\s*(?P<unit>[^\W\d][\w\-]*\.?)\s*\)?$")
_COUNT_X_CONTENT = re.compile(
    r"^(?P<n>\d+)\s*[xх×*]\s*(?P<content>\d+(?:[.,]\d+)?)\s*(?P<cu>[^\W\d]+\.?)?$", re.I
)
_CONTENT_X_COUNT = re.compile(
    r"(?P<content>\d+(?:[.,]\d+)?)\s*(?P<cu>[^\W\d]+)?\s*[xх×]\s*(?P<n>\d+)\s*$", re.I
)
_PAREN_COUNT = re.compile(r"\(\s*(?P<n>\d+)\s*(?P<unit>[^\W\d][\w\-]*\.?)\s*\)")
_DESC_PACK_HINT = re.compile(r"[xх×(]|of|/", re.I)


def _number(text: str):
    n = Decimal(text.replace(",", "."))
    return int(n) if n == n.to_integral_value() else float(n)


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
    m = _PACK_OF.match(t)
    if m:
        return m.group("unit"), int(m.group("n"))
    m = _N_PER.match(t)
    if m:
        return m.group("unit"), int(m.group("n"))
    m = _VE.match(t)
    if m:
        return None, int(m.group("n"))
    m = _COUNT_X_CONTENT.match(t)
    if m and m.group("cu"):
        return None, int(m.group("n"))
    m = _CONTENT_X_COUNT.fullmatch(t)
    if m:
        return None, int(m.group("n"))
    m = _N_UNIT.match(t)
    if m and normalize_unit(m.group("unit")):
        return m.group("unit"), int(m.group("n"))
    if t.isdigit():
        return None, int(t)
    return t, None


def pack_in_description(desc: str) -> tuple[str | None, int | None, str | None]:
    """A pack size written inside a description: (unit, count, doubt or None).

    "R1 a/Ø28i (24 комп.)" -> ("комп.", 24, None); "BANANA ROAST 454G X12" ->
    ("case", 12, None); "CHEERATHORAN 350 X 12" -> ("case", 12, "<doubt>").
    Sizes that describe the product ("100 LİTRE", "2KG") are not packs.
    """
    if not desc or not _DESC_PACK_HINT.search(desc):
        return None, None, None
    for m in _PAREN_COUNT.finditer(desc):
        unit = m.group("unit")
        if normalize_unit(unit) in ("set", "piece", "pack", "box", "pair"):
            return unit, int(m.group("n")), None
    m = _CONTENT_X_COUNT.search(desc)
    if m:
        n = int(m.group("n"))
        if n > 1:
            cu = m.group("cu")
            if cu and (normalize_unit(cu) or fold(cu) in ("gm", "gms", "grm", "kgs", "ltr", "ml")):
                return "case", n, None
            if not cu:
                return "case", n, (
                    f"pack {m.group(0).strip()!r}: the content of one unit has no measure "
                    "(g? ml?), check the pack size"
                )
    return None, None, None


# ------------------------------------------------------------- header words

SKU_WORDS = (
    "sku", "sku id", "item code", "item no", "item nr", "item number", "item #", "item id",
    "article no", "article number", "art no", "art nr", "art.-nr", "art.-nr.", "art.nr", "artnr",
    "artikelnummer", "artikel-nr", "artikel-nr.", "artikelnr", "bestellnummer", "best.-nr",
    "code", "product code", "product id", "part number", "part no", "part #", "p/n", "pn",
    "reference", "ref", "réf", "ref.", "code article", "codigo", "código", "referencia", "cod",
    "codice", "codice articolo", "artikelcode", "artikel", "catalog number", "cat no",
    "артикул", "код", "код товара", "каталожный номер", "kod", "kod produktu", "indeks",
    "symbol", "numer katalogowy", "stok kodu", "urun kodu", "kodu", "ma hang", "mã hàng",
    "mã sp", "kode", "kode barang", "item",
)
SKU_WEAK_WORDS = (
    "model", "model no", "модель", "mpn", "manufacturer part number", "mfr part", "ean",
    "barcode", "gtin", "upc", "штрихкод", "штрих-код",
)
DESC_WORDS = (
    "description", "desc", "name", "product", "product name", "product description",
    "item name", "item description", "article", "designation", "désignation", "libellé",
    "bezeichnung", "artikelbezeichnung", "beschreibung", "produkt", "produktname", "ware",
    "warenbezeichnung", "descripción", "descripcion", "nombre", "producto", "artículo",
    "descrizione", "nome", "prodotto", "articolo", "omschrijving", "naam", "наименование",
    "наименование товара", "название", "номенклатура", "товар", "продукция", "назва",
    "найменування", "опис", "nazwa", "opis", "towar", "açıklama", "ürün", "ürün adı",
    "malzeme", "услуга", "услуги", "препарат", "component", "tên", "tên hàng", "mô tả",
    "nama", "nama barang", "deskripsi", "product name", "title",
)
# Name-like columns that name someone else, not the item.
DESC_NOT_WORDS = (
    "shop name", "shop", "store", "supplier", "vendor", "brand", "manufacturer", "customer",
    "company", "city", "country", "страна", "город", "производитель", "поставщик", "бренд",
    "hersteller", "lieferant", "herkunft",
)
DESC_WEAK_WORDS = ("category name", "category", "kategorie", "группа", "type", "тип")
PRICE_WORDS = (
    "price", "prices", "unit price", "unitprice", "list price", "listprice", "sale price",
    "selling price", "retail price", "net price", "rate", "cost", "unit cost", "preis", "preise",
    "einzelpreis", "listenpreis", "stückpreis", "vk", "vk-preis", "vk preis", "ek-preis",
    "nettopreis", "prix", "prix unitaire", "prix ht", "tarif", "precio", "precio unitario",
    "prezzo", "prezzo unitario", "prijs", "stukprijs", "цена", "цены", "стоимость", "ціна",
    "вартість", "cena", "cena netto", "cena brutto", "cena jedn.", "fiyat", "fiyatı",
    "liste fiyatı", "birim fiyat", "giá", "đơn giá", "harga", "presyo",
)
PRICE_STRONG_WORDS = (
    "unit price", "unitprice", "list price", "listprice", "einzelpreis", "listenpreis",
    "stückpreis", "prix unitaire", "precio unitario", "prezzo unitario", "stukprijs",
    "liste fiyatı", "birim fiyat", "đơn giá", "розница", "розничная", "роздріб", "retail",
    "cena jedn.", "price_unit",
)
PRICE_SECONDARY_WORDS = (
    "опт", "оптовая", "wholesale", "bulk", "dealer", "händler", "мелкий опт", "vip",
    "old", "alt", "previous", "прежняя", "старая",
)
# A price column with these words is not the unit price (totals, discounts, statistics).
PRICE_NOT_WORDS = (
    "extended", "ext", "total", "totals", "sum", "summe", "gesamt", "gesamtpreis", "amount",
    "subtotal", "итого", "сумма", "всего", "razem", "suma", "wartość", "toplam", "tutar",
    "montant", "importe", "importo", "bedrag", "discount", "rabatt", "remise", "descuento",
    "sconto", "korting", "скидка", "знижка", "rabat", "indirim", "commission", "margin", "marge",
    "min", "min.", "max", "max.", "мин", "мин.", "макс", "макс.", "average", "avg", "median",
    "средняя", "медиана", "mean", "чаще", "%",
)
UNIT_WORDS = (
    "unit", "units", "uom", "u/m", "unit of measure", "unit of measurement", "measure", "einheit",
    "me", "mengeneinheit", "je", "unité", "unite", "unidad", "unità", "eenheid", "ед", "ед.",
    "ед. изм", "ед. изм.", "ед.изм", "ед.изм.", "единица", "единица измерения", "од", "од.",
    "од. вим", "од. вим.", "одиниця", "jm", "j.m.", "jednostka", "birim", "đvt", "dvt", "satuan",
    "per",
)
PACK_WORDS = (
    "pack", "pack size", "package", "packing", "packaging", "case qty", "case pack", "qty/case",
    "qty per case", "pack qty", "inner", "ve", "vpe", "verpackungseinheit", "verpackung", "gebinde",
    "colisage", "conditionnement", "embalaje", "empaque", "confezione", "imballo", "verpakking",
    "упаковка", "в упаковке", "фасовка", "кратность", "упак", "пакування", "opakowanie",
    "ambalaj", "koli",
)
CURRENCY_WORDS = (
    "currency", "curr", "cur", "ccy", "währung", "waehrung", "devise", "moneda", "divisa",
    "valuta", "munt", "валюта", "waluta", "para birimi", "döviz",
)
TOTAL_ROW_WORDS = ("total", "subtotal", "итого", "всего", "summe", "gesamt", "razem", "toplam", "suma")

_RE = {
    "sku": _phrase_regex(SKU_WORDS),
    "sku_weak": _phrase_regex(SKU_WEAK_WORDS),
    "desc": _phrase_regex(DESC_WORDS),
    "desc_weak": _phrase_regex(DESC_WEAK_WORDS),
    "desc_not": _phrase_regex(DESC_NOT_WORDS),
    "price": _phrase_regex(PRICE_WORDS),
    "price_strong": _phrase_regex(PRICE_STRONG_WORDS),
    "price_secondary": _phrase_regex(PRICE_SECONDARY_WORDS),
    "price_not": _phrase_regex(PRICE_NOT_WORDS),
    "unit": _phrase_regex(UNIT_WORDS),
    "pack": _phrase_regex(PACK_WORDS),
    "currency": _phrase_regex(CURRENCY_WORDS),
    "total_row": _phrase_regex(TOTAL_ROW_WORDS),
}
_HEADER_CELL_MAX = 80  # a header label is short; long text is a title or a note


_VAT_WORDS_RE = _phrase_regex((
    "без пдв", "з пдв", "без ндс", "с ндс", "excl. vat", "excl vat", "incl. vat", "incl vat",
    "ex vat", "netto", "brutto", "ohne mwst", "inkl. mwst", "ht", "ttc", "bez dph", "s dph",
    "kdv hariç", "kdv dahil", "net", "gross",
))


def _is_currency_only(text: str) -> bool:
    if not (find_currencies(text) or ambiguous_currency_symbol(text)):
        return False
    rest = _SYMBOL_RE.sub(" ", text)
    rest = _ISO_RE.sub(" ", rest)
    rest = _AMBIGUOUS_RE.sub(" ", rest)
    rest = _WORD_RE.sub(" ", fold(rest))
    rest = _VAT_WORDS_RE.sub(" ", rest)
    return not re.search(r"\w", rest)


def classify_header(text: str) -> tuple[str, int] | None:
    """(role, strength) of a header cell, or None. Strength ranks columns of one role."""
    if not text or len(text) > _HEADER_CELL_MAX:
        return None
    f = fold(text)
    if not f or _PLAIN_NUMBER_RE.match(f):
        return None
    if _RE["price"].search(f) and not _RE["price_not"].search(f):
        if _RE["price_strong"].search(f):
            return "price", 3
        if _RE["price_secondary"].search(f):
            return "price", 1
        return "price", 2
    if _is_currency_only(text):
        # " € без ПДВ", "руб.", "Euro": a price column labelled by its currency.
        return "price", 1
    if _RE["currency"].fullmatch(f):
        return "currency", 2
    if _RE["pack"].search(f):
        return "pack", 2
    if _RE["unit"].fullmatch(f.rstrip(":")) or _RE["unit"].match(f) and len(f) <= 20:
        return "unit", 2
    if _RE["desc_not"].search(f):
        return None
    if _RE["desc_weak"].search(f) and not re.search(r"description|наименование|назва", f):
        return "desc", 1
    sku = _RE["sku"].search(f)
    desc = _RE["desc"].search(f)
    if sku and desc:
        # "Item description" is a description, "Item code"/"Product code" a SKU.
        return ("desc", 2) if len(desc.group(0)) > len(sku.group(0)) else ("sku", 2)
    if sku:
        return "sku", 2
    if desc:
        return "desc", 2
    if _RE["sku_weak"].search(f):
        return "sku", 1
    return None


# ------------------------------------------------------------------ header


@dataclass
class _Layout:
    header_rows: tuple[int, ...]  # 1-based
    labels: list[str]  # combined header text per column
    price: int
    sku: int | None
    desc: list[int]
    unit: int | None
    pack: int | None
    currency: int | None
    other_prices: list[int]
    ambiguous_price: bool


def _row(sheet: Sheet, r: int) -> list[str]:
    return sheet.rows[r - 1] if 0 < r <= len(sheet.rows) else []


def _layout_from_labels(labels: list[str], header_rows: tuple[int, ...]) -> _Layout | None:
    roles: dict[str, list[tuple[int, int]]] = {}
    for col, label in enumerate(labels):
        got = classify_header(label)
        if got:
            roles.setdefault(got[0], []).append((got[1], col))
    if "price" not in roles or not ("sku" in roles or "desc" in roles):
        return None

    def best(role):
        cands = roles.get(role)
        if not cands:
            return None
        top = max(s for s, _ in cands)
        return min(c for s, c in cands if s == top)

    prices = sorted(roles["price"], key=lambda sc: (-sc[0], sc[1]))
    top = prices[0][0]
    price = prices[0][1]
    desc_cols = [c for _, c in sorted(roles.get("desc", []), key=lambda sc: (-sc[0], sc[1]))]
    return _Layout(
        header_rows=header_rows,
        labels=labels,
        price=price,
        sku=best("sku"),
        desc=desc_cols,
        unit=best("unit"),
        pack=best("pack"),
        currency=best("currency"),
        other_prices=[c for _, c in prices[1:]],
        ambiguous_price=sum(1 for s, _ in prices if s == top) > 1,
    )


def _score(layout: _Layout) -> tuple:
    found = sum(x is not None for x in (layout.sku, layout.unit, layout.pack, layout.currency))
    return (found + (1 if layout.desc else 0), -len(layout.header_rows))


def _find_layouts(sheet: Sheet) -> list[_Layout]:
    """Header candidates in the first rows, best first."""
    cands: list[tuple[tuple, int, _Layout]] = []
    n = min(len(sheet.rows), HEADER_SCAN_ROWS)
    for r in range(1, n + 1):
        row = _row(sheet, r)
        if not row:
            continue
        single = _layout_from_labels(row, (r,))
        if single:
            cands.append((_score(single), -r, single))
        nxt = _row(sheet, r + 1)
        if nxt:
            width = max(len(row), len(nxt))
            labels = [
                " ".join(x for x in ((row[i] if i < len(row) else ""), (nxt[i] if i < len(nxt) else "")) if x)
                for i in range(width)
            ]
            double = _layout_from_labels(labels, (r, r + 1))
            if double and parse_decimal(_cell(nxt, double.price)) is not None:
                double = None  # the second row is data, not a header line
            if double and (single is None or _score(double)[0] > _score(single)[0]):
                cands.append((_score(double), -r, double))
    # Most roles found wins; on a tie the earliest row (a later match is
    # usually a repeated header or a second table).
    cands.sort(key=lambda t: (t[0], t[1]), reverse=True)
    return [c[2] for c in cands]


# -------------------------------------------------------------- extraction


def _decimal_style(sheet: Sheet, col: int, start: int) -> str | None:
    """',' or '.' when the price column shows which separator is the decimal one."""
    votes = {",": 0, ".": 0}
    for row in sheet.rows[start - 1 : start - 1 + 2000]:
        if col >= len(row):
            continue
        t = row[col]
        if not t or _FAST_DECIMAL.match(t) and "." not in t:
            continue
        last_dot, last_comma = t.rfind("."), t.rfind(",")
        if last_dot >= 0 and last_comma >= 0:
            votes["." if last_dot > last_comma else ","] += 1
            continue
        for sep in ".,":
            i = t.rfind(sep)
            if i >= 0:
                digits = len(re.match(r"\d*", t[i + 1 :]).group(0))
                if digits and digits != 3:
                    votes[sep] += 1
    if votes[","] > votes["."]:
        return ","
    if votes["."] > votes[","]:
        return "."
    return None


def _cell(row: list[str], col: int | None) -> str:
    return row[col] if col is not None and col < len(row) else ""


def _col_letter(col: int) -> str:
    out = ""
    col += 1
    while col:
        col, rem = divmod(col - 1, 26)
        out = chr(65 + rem) + out
    return out


def _sheet_currency_context(sheet: Sheet, layout: _Layout) -> tuple[str | None, str, list[str]]:
    """Currency from headers and title rows: (code, basis, doubts)."""
    doubts: list[str] = []
    price_label = layout.labels[layout.price]
    code = detect_currency(price_label)
    if code:
        return code, f"price header {price_label!r}", doubts
    symbol = ambiguous_currency_symbol(price_label)
    if symbol:
        doubts.append(f"the price header {price_label!r} shows {symbol!r}, which does not say which currency")
    sibling: set[str] = set()
    for i, label in enumerate(layout.labels):
        if i != layout.price and label:
            sibling |= find_currencies(label)
    if len(sibling) == 1:
        code = next(iter(sibling))
        return code, "a sibling header (" + ", ".join(
            repr(l) for i, l in enumerate(layout.labels) if i != layout.price and code in find_currencies(l)
        ) + ")", doubts
    if len(sibling) > 1:
        doubts.append(f"the headers name several currencies ({', '.join(sorted(sibling))})")
        return None, "", doubts
    title: set[str] = set()
    for r in range(1, layout.header_rows[0]):
        for text in _row(sheet, r):
            title |= find_currencies(text)
    if len(title) == 1:
        code = next(iter(title))
        return code, f"a note in the title rows (1-{layout.header_rows[0] - 1})", doubts
    if len(title) > 1:
        doubts.append(f"the title rows name several currencies ({', '.join(sorted(title))})")
    return None, "", doubts


def _is_repeated_header(row: list[str], layout: _Layout) -> bool:
    label = layout.labels[layout.price]
    text = _cell(row, layout.price)
    return bool(text) and (fold(text) in fold(label) or classify_header(text) is not None and classify_header(text)[0] == "price")


def _extract_sheet(sheet: Sheet, layout: _Layout, notes: list[str]) -> list[dict]:
    start = layout.header_rows[-1] + 1
    pc = layout.price
    decimal = _decimal_style(sheet, pc, start)
    sheet_code, basis, doubts = _sheet_currency_context(sheet, layout)
    notes.append(
        f"sheet {sheet.name!r}: header row {'+'.join(map(str, layout.header_rows))}; "
        f"price from column {_col_letter(pc)} {layout.labels[pc]!r}"
        + (f"; SKU from column {_col_letter(layout.sku)} {layout.labels[layout.sku]!r}" if layout.sku is not None else "; no SKU column")
        + (f"; description from column {_col_letter(layout.desc[0])} {layout.labels[layout.desc[0]]!r}" if layout.desc else "")
        + (f"; unit from column {_col_letter(layout.unit)}" if layout.unit is not None else "")
        + (f"; pack from column {_col_letter(layout.pack)}" if layout.pack is not None else "")
        + (f"; decimal separator {decimal!r}" if decimal else "")
    )
    if layout.other_prices:
        notes.append(
            f"sheet {sheet.name!r}: other price columns not used: "
            + ", ".join(f"{_col_letter(c)} {layout.labels[c]!r}" for c in layout.other_prices)
        )
    if sheet_code:
        notes.append(f"sheet {sheet.name!r}: currency {sheet_code} from {basis}")
    for d in doubts:
        notes.append(f"sheet {sheet.name!r}: {d}")

    sku_col, desc_cols, unit_col, pack_col, cur_col = layout.sku, layout.desc, layout.unit, layout.pack, layout.currency
    main_desc = desc_cols[0] if desc_cols else None
    fmt_currency = sheet.format_currency if sheet.currency_formats else None
    split_cache: dict[str, tuple] = {}
    items: list[dict] = []
    skipped_no_price = 0
    name = sheet.name
    rows = sheet.rows
    for r in range(start, len(rows) + 1):
        row = rows[r - 1]
        if not row:
            continue
        price_text = row[pc] if pc < len(row) else ""
        if not price_text:
            if (_cell(row, sku_col) and _cell(row, main_desc)):
                skipped_no_price += 1
            continue
        sku = _cell(row, sku_col)
        desc = _cell(row, main_desc)
        if not desc:
            for c in desc_cols[1:]:
                desc = _cell(row, c)
                if desc:
                    break
        if not sku and not desc:
            continue  # a lone number: a subtotal or a stray cell, not an item
        value = parse_decimal(price_text, decimal)
        if value is None:
            if _is_repeated_header(row, layout):
                continue
            if not sku and len([c for c in row if c]) <= 1:
                continue
        if not sku and desc and _RE["total_row"].match(fold(desc)):
            continue
        flags: list[dict] = []
        # Currency: the cell itself, the row's currency column, the cell's
        # number format, then the sheet context (headers, title note).
        code = None
        if value is not None and not _PLAIN_NUMBER_RE.match(price_text):
            code = detect_currency(price_text)
        if code is None and cur_col is not None:
            cur_text = _cell(row, cur_col)
            code = detect_currency(cur_text) or (cur_text.upper() if cur_text.upper() in _ISO_CODES else None)
        if code is None and fmt_currency is not None:
            code = fmt_currency(r, pc)
        if code is None:
            code = sheet_code
            if code is None and doubts:
                flags.append({"code": "missing_currency", "field": "currency",
                              "message": "Currency not stated clearly: " + "; ".join(doubts) + "."})
        unit = None
        pack = None
        if unit_col is not None:
            ut = _cell(row, unit_col)
            if ut:
                got = split_cache.get(ut)
                if got is None:
                    got = split_cache[ut] = split_pack(ut)
                unit, pack = got
        if pack_col is not None:
            pt = _cell(row, pack_col)
            if pt:
                got = split_cache.get(pt)
                if got is None:
                    got = split_cache[pt] = split_pack(pt)
                pu, pn = got
                if pn is not None:
                    pack = pn
                    if unit is None and pu is not None and normalize_unit(pu):
                        unit = pu
        if pack is None and desc:
            du, dn, doubt = pack_in_description(desc)
            if dn is not None:
                pack = dn
                if unit is None:
                    unit = du
                if doubt:
                    flags.append({"code": "ambiguous_pack", "field": "pack_size", "message": doubt})
        if layout.ambiguous_price:
            flags.append({
                "code": "ambiguous_price_column", "field": "unit_price",
                "message": "The sheet has several price columns of the same kind; the first ("
                f"{layout.labels[pc]!r}) was used. Check it is the unit price.",
            })
        item = {
            "sku": sku,
            "description": desc,
            "unit": unit,
            "pack_size": pack,
            "unit_price": canonical_decimal(value) if value is not None else price_text,
            "currency": code,
            "source": {"sheet": name, "row": r},
        }
        if flags:
            item["flags"] = flags
        items.append(item)
    if skipped_no_price:
        notes.append(f"sheet {sheet.name!r}: {skipped_no_price} rows with a SKU and a description but no price were skipped")
    return items


def extract_items(table: Table) -> Extraction:
    """Turn a table into candidate items; raise NotAnItemList when there are none."""
    notes: list[str] = []
    items: list[dict] = []
    reasons: list[str] = []
    if not any(any(row for row in s.rows) for s in table.sheets):
        raise NotAnItemList(MSG_EMPTY_TABLE)
    for sheet in table.sheets:
        if not sheet.rows:
            continue
        layouts = _find_layouts(sheet)
        if not layouts:
            reasons.append(f"sheet {sheet.name!r}: no header row with a price column and a SKU or description column")
            notes.append(f"sheet {sheet.name!r} skipped: no header row with a price column and a SKU or description column in its first {HEADER_SCAN_ROWS} rows")
            continue
        for layout in layouts[:3]:
            sheet_notes: list[str] = []
            got = _extract_sheet(sheet, layout, sheet_notes)
            if got:
                items.extend(got)
                notes.extend(sheet_notes)
                break
        else:
            reasons.append(f"sheet {sheet.name!r}: header found but no row below it has a price")
            notes.append(f"sheet {sheet.name!r} skipped: header found but no row below it has a price")
    if not items:
        if all("no header row" in r for r in reasons):
            raise NotAnItemList(MSG_NO_HEADER.format(n=HEADER_SCAN_ROWS))
        raise NotAnItemList(MSG_NO_ITEMS.format(details="; ".join(reasons)))
    return Extraction(items=items, notes=notes)
