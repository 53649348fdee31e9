"""Money: currencies named in text, and prices written as decimals.

The product's one price parser. A currency is read only where the text
names exactly one (a symbol, an ISO code, a word); "$" alone never says
which dollar. A price is read from a sheet's cell in every European and US
separator style and refused when the text is not just a number (with an
optional currency) (``parse_decimal``); a price an item stores is plain
decimal text (``price_value``); a price a reviewer types is digits with a
decimal point or comma (``typed_price``).
"""

from __future__ import annotations

import functools
import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from catalog.extraction.text import cap, fold

# Symbols that name exactly one currency.
SYMBOLS = {
    "€": "EUR",
    "£": "GBP",
    "₽": "RUB",
    "₴": "UAH",
    "₹": "INR",
    "₸": "KZT",
    "₺": "TRY",
    "₱": "PHP",
    "₫": "VND",
    "₩": "KRW",
    "₪": "ILS",
    "₦": "NGN",
    "US$": "USD",
    "C$": "CAD",
    "CA$": "CAD",
    "A$": "AUD",
    "AU$": "AUD",
    "NZ$": "NZD",
    "R$": "BRL",
    "HK$": "HKD",
    "S$": "SGD",
}
SYMBOL_RE = re.compile("|".join(re.escape(s) for s in sorted(SYMBOLS, key=len, reverse=True)))
# Symbols that do not say which currency: noted, never resolved.
AMBIGUOUS_SYMBOLS = ("$", "¥", "kr")
ISO_CODES = [
    "USD",
    "EUR",
    "GBP",
    "CHF",
    "CAD",
    "AUD",
    "NZD",
    "JPY",
    "CNY",
    "RUB",
    "RUR",
    "UAH",
    "BYN",
    "KZT",
    "PLN",
    "CZK",
    "HUF",
    "RON",
    "BGN",
    "SEK",
    "NOK",
    "DKK",
    "ISK",
    "TRY",
    "INR",
    "PKR",
    "LKR",
    "BDT",
    "NPR",
    "IDR",
    "MYR",
    "SGD",
    "HKD",
    "THB",
    "VND",
    "PHP",
    "KRW",
    "ZAR",
    "BRL",
    "MXN",
    "ARS",
    "CLP",
    "COP",
    "AED",
    "SAR",
    "ILS",
    "EGP",
    "NGN",
    "KES",
    "UZS",
    "GEL",
    "AMD",
    "AZN",
    "MDL",
    "RSD",
]
ISO_RE = re.compile(r"(?<![A-Za-z])(" + "|".join(ISO_CODES) + r"|RMB)(?![A-Za-z])")
_ISO_ALIASES = {"RUR": "RUB", "RMB": "CNY"}
# Words (matched on folded text, whole words) that name one currency.
WORDS = {
    "eur": "EUR",
    "euro": "EUR",
    "euros": "EUR",
    "евро": "EUR",
    "євро": "EUR",
    "usd": "USD",
    "gbp": "GBP",
    "chf": "CHF",
    "pln": "PLN",
    "uah": "UAH",
    "kzt": "KZT",
    "czk": "CZK",
    "inr": "INR",
    "zar": "ZAR",
    "руб": "RUB",
    "руб.": "RUB",
    "рубли": "RUB",
    "рублей": "RUB",
    "рубль": "RUB",
    "рублях": "RUB",
    "рубля": "RUB",
    "rub.": "RUB",
    "грн": "UAH",
    "грн.": "UAH",
    "гривна": "UAH",
    "гривень": "UAH",
    "гривні": "UAH",
    "гривен": "UAH",
    "гривнях": "UAH",
    "тг": "KZT",
    "тенге": "KZT",
    "теңге": "KZT",
    "zł": "PLN",
    "zl": "PLN",
    "złotych": "PLN",
    "zlotych": "PLN",
    "złoty": "PLN",
    "долл": "USD",
    "долл.": "USD",
    "доллар": "USD",
    "долларов": "USD",
    "доларів": "USD",
    "kč": "CZK",
    "lei": "RON",
    "лв": "BGN",
    "лв.": "BGN",
    "rupees": "INR",
    "reais": "BRL",
    "real": "BRL",
    "人民币": "CNY",
    "元": "CNY",
    "円": "JPY",
}
WORD_RE = re.compile(
    r"(?<![\w])(" + "|".join(re.escape(fold(w)) for w in sorted(WORDS, key=len, reverse=True)) + r")(?![\w])"
)
_FOLDED_WORDS = {fold(w): c for w, c in WORDS.items()}
# Abbreviations that are currencies only right after an amount: "100р.", "6,31руб", "50 TL".
_AFTER_AMOUNT_RE = re.compile(r"\d\s?(р\.?|руб|TL|Ft|Kč|zł|грн)(?![\w])")
_AFTER_AMOUNT = {
    "р": "RUB",
    "р.": "RUB",
    "руб": "RUB",
    "TL": "TRY",
    "Ft": "HUF",
    "Kč": "CZK",
    "zł": "PLN",
    "грн": "UAH",
}
PLAIN_NUMBER_RE = re.compile(r"[\d\s.,'’\-+()%/]*+")
AMBIGUOUS_RE = re.compile(r"(?<![A-Za-z])(\$|¥|kr)(?![A-Za-z])")


def find_currencies(text: str) -> set[str]:
    """Every currency named in ``text`` by symbol, ISO code or word."""
    if not text:
        return set()
    text = cap(text)
    if PLAIN_NUMBER_RE.fullmatch(text):
        return set()
    found = {SYMBOLS[m] for m in SYMBOL_RE.findall(text)}
    found.update(_ISO_ALIASES.get(m, m) for m in ISO_RE.findall(text))
    found.update(_AFTER_AMOUNT[m] for m in _AFTER_AMOUNT_RE.findall(text))
    found.update(_FOLDED_WORDS[m] for m in WORD_RE.findall(fold(text)))
    return found


def detect_currency(text: str) -> str | None:
    """The one currency ``text`` names, or None (none, or more than one)."""
    found = find_currencies(text)
    return found.pop() if len(found) == 1 else None


def ambiguous_currency_symbol(text: str) -> str | None:
    """A currency symbol in ``text`` that does not say which currency ("$")."""
    if not text:
        return None
    m = AMBIGUOUS_RE.search(SYMBOL_RE.sub("", cap(text)))
    return m.group(1) if m else None


# ---------------------------------------------------------------- numbers

# A whole part led by a zero before another digit ("0012", "007") is a code, never an amount:
# on the development part such cells stand in the SKU columns of 7 files, in barcode, category
# and other columns, 13 files in all, and in no price, quantity or pack column.
FAST_DECIMAL = re.compile(r"-?(?:0|[1-9]\d*+)(?:\.\d++)?")
_LEADING_ZERO = re.compile(r"[+-]?0\d")
_SPACES_RE = re.compile(r"[\s\u00a0\u202f\u2009\u2007]++")
_GROUP_RE = re.compile(r"\d{3}")
_LAST_GROUP_RE = re.compile(r"\d{3}(?:[.,]\d++)?")
_NUMBER_BODY = re.compile(r"[+-]?\d[\d.,]*+")
# Three capitals are a currency only when they are a code ISO_RE knows: "EUR 12" is
# twelve euros, "WDC12" and "VSV-100" are article codes, "12 PCS" a quantity.
_CODES = "|".join([*ISO_CODES, *_ISO_ALIASES])
_CURRENCY_AFFIX = re.compile(
    r"(?:(?:" + _CODES + r")|[€£₽₴₹₸₺₱₫₩$¥]|US\$|руб\.?|р\.?|грн\.?|тг|zł|zl|kr|Kč|TL|Ft|Rs\.?|lei|R\$)",
)
_CURRENCY_SUFFIX = re.compile(
    r"(?:(?<![A-Z])(?:"
    + _CODES
    + r")|[€£₽₴₹₸₺₱₫₩$¥]|руб\.?|р\.?|грн\.?|тг|zł|zl|kr|Kč|TL|Ft|lei|,-|\.-|,—|\.—)$",
)
MAX_NUMBER_CHARS = 64  # no price is written in more characters than this


def _strip_affixes(s: str) -> tuple[str, bool]:
    """Drop parentheses (negative), currency before/after, and the sign."""
    negative = False
    if s.startswith("(") and s.endswith(")"):
        negative, s = True, s[1:-1].strip()
    for _ in range(2):
        m = _CURRENCY_AFFIX.match(s)
        if m and m.end() < len(s):
            s = s[m.end() :].strip()
        m = _CURRENCY_SUFFIX.search(s[-8:])
        if m:
            cut = len(s) - 8 + m.start() if len(s) > 8 else m.start()
            if cut > 0:
                s = s[:cut].strip()
    if s.startswith(("-", "−")):
        negative, s = not negative, s[1:].strip()
    elif s.startswith("+"):
        s = s[1:].strip()
    return s, negative


def _join_spaced_groups(s: str) -> str | None:
    """ "1 234,50" -> "1234,50"; None when spaces or apostrophes are not thousands."""
    s = _SPACES_RE.sub(" ", s).replace("’", "'").replace("`", "'")
    for ch in (" ", "'"):
        if ch in s:
            parts = s.split(ch)
            if not (parts[0].isdigit() and len(parts[0]) <= 3):
                return None
            if not all(_GROUP_RE.fullmatch(p) for p in parts[1:-1]):
                return None
            if not _LAST_GROUP_RE.fullmatch(parts[-1]):
                return None
            s = "".join(parts)
    return s


def _valid_grouping(int_part: str, sep: str) -> bool:
    groups = int_part.split(sep)
    if len(groups) == 1:
        return groups[0].isdigit()
    return (
        1 <= len(groups[0]) <= 3
        and groups[0].isdigit()
        and all(len(g) == 3 and g.isdigit() for g in groups[1:])
    )


def _both_separators(s: str) -> str | None:
    dec = "." if s.rfind(".") > s.rfind(",") else ","
    thousands = "," if dec == "." else "."
    if s.count(dec) != 1:
        return None
    int_part, frac = s.split(dec)
    if not _valid_grouping(int_part, thousands):
        return None
    return int_part.replace(thousands, "") + "." + frac


def _one_separator(s: str, sep: str, decimal: str | None) -> str | None:
    groups = s.split(sep)
    if len(groups) > 2:
        return s.replace(sep, "") if _valid_grouping(s, sep) else None
    int_part, frac = groups
    if not int_part or not frac:
        return None
    if len(frac) == 3 and int_part != "0" and not int_part.startswith("0"):
        # "1.234" / "1,234": the column's style decides; else "," is thousands.
        chosen = decimal or ("." if sep == "." else "")
        return int_part + "." + frac if chosen == sep else int_part + frac
    return int_part + "." + frac


def _to_plain(s: str, decimal: str | None) -> str | None:
    dots, commas = s.count("."), s.count(",")
    if dots and commas:
        return _both_separators(s)
    if dots or commas:
        return _one_separator(s, "." if dots else ",", decimal)
    return s


def parse_decimal(text: str, decimal: str | None = None) -> Decimal | None:
    """Parse a price as written: "1.234,50", "1,234.50", "1 234,50", "1'234.50", "€ 12".

    ``decimal`` (',' or '.') settles the one truly ambiguous form, a single
    separator followed by exactly three digits ("1.234", "1,234"); without it
    "1,234" is read as thousands (US) and "1.234" as a decimal point.
    Returns None for anything that is not just a number (with an optional
    currency): "от 1 500", "90/pc", "enquire".
    """
    if not text or len(text) > MAX_NUMBER_CHARS:
        return None
    if FAST_DECIMAL.fullmatch(text) and (decimal != "," or "." not in text):
        return Decimal(text)
    return _parse_written(text, decimal)


# The same cell is read as a number by several column features, the rules and validation; the
# cache holds texts of at most MAX_NUMBER_CHARS characters.
@functools.lru_cache(maxsize=1 << 16)
def _parse_written(text: str, decimal: str | None) -> Decimal | None:
    s, negative = _strip_affixes(text.strip())
    s = _join_spaced_groups(s)
    if s is None or not _NUMBER_BODY.fullmatch(s) or _LEADING_ZERO.match(s):
        return None
    s = _to_plain(s, decimal)
    if s is None:
        return None
    try:
        value = Decimal(s)
    except InvalidOperation:
        return None
    if not value.is_finite():
        return None
    return -value if negative else value


def other_reading(text: str) -> tuple[str, Decimal] | None:
    """(the separator, the value) when ``text`` reads otherwise with its one separator taken the
    other way ("1.234": 1.234 or 1234; "1,234": 1234 or 1.234) than ``parse_decimal`` without a
    style reads it; None when it reads one way only."""
    by_dot, by_comma = parse_decimal(text, "."), parse_decimal(text, ",")
    if by_dot is None or by_comma is None or by_dot == by_comma:
        return None
    sign = "." if "." in text else ","
    return sign, by_comma if parse_decimal(text) == by_dot else by_dot


def plain_decimal(value: object) -> Decimal | None:
    """``value`` read as a plain decimal ("12.50", "-3", "1E+3", as Decimal
    reads its text); None when it is not one."""
    try:
        return Decimal(str(value))
    except (InvalidOperation, ValueError, TypeError):
        return None


MAX_PRICE = Decimal(10) ** 12  # the catalog keeps 12 digits before the point
_MAX_PRICE_CHARS = 40


def price_value(value: object) -> Decimal | None:
    """The price an item stores (plain decimal text), when it is a finite
    number the catalog can hold; None otherwise."""
    text = str(value)
    if len(text) > _MAX_PRICE_CHARS:
        return None
    number = plain_decimal(text)
    return number if number is not None and number.is_finite() and abs(number) < MAX_PRICE else None


_TYPED_PRICE = re.compile(r"\d+(?:\.\d+)?")


def typed_price(text: str) -> str | None:
    """A positive price as a person typed it ("1.10", "1,10" for 1.10), as
    items store it: the digits typed, a point for the decimal comma. None
    for anything else (a sign, thousands separators, letters, zero)."""
    text = text.strip()
    plain = text.replace(",", ".") if text.count(",") == 1 and "." not in text else text
    if not _TYPED_PRICE.fullmatch(plain) or Decimal(plain) <= 0:
        return None
    return plain


def canonical_decimal(value: Decimal) -> str:
    """'5.26000' -> '5.26', '494.00' -> '494', never an exponent."""
    return format(value.normalize(), "f")


def round_to_places(value: Decimal, places: int) -> Decimal:
    """The value as a number format with ``places`` decimals displays it."""
    return value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def _separator_vote(text: str) -> str | None:
    """The decimal sign one cell shows: the last of two different separators; the other sign,
    when one separator stands twice ("1.300.000": a decimal sign stands once); a lone separator
    followed by other than three digits ("12.5"), or by three after a whole part that no group
    of thousands begins with ("0.401", "1030.000"). None for "1.234" and "1,234"."""
    last_dot, last_comma = text.rfind("."), text.rfind(",")
    if last_dot >= 0 and last_comma >= 0:
        return "." if last_dot > last_comma else ","
    for sep, other in ((".", ","), (",", ".")):
        i = text.rfind(sep)
        if i < 0:
            continue
        if text.count(sep) > 1:
            return other
        tail, head = text[i + 1 :], text[:i]
        digits = len(tail) - len(tail.lstrip("0123456789"))
        whole = len(head) - len(head.rstrip("0123456789"))
        if digits and (digits != 3 or whole > 3 or head[i - whole : i].startswith("0")):
            return sep
    return None


def decimal_style(texts) -> str | None:
    """',' or '.' when the column's cells show which separator is the decimal one."""
    votes = {",": 0, ".": 0}
    for text in texts:
        if not text or len(text) > MAX_NUMBER_CHARS:
            continue
        if FAST_DECIMAL.fullmatch(text) and "." not in text:
            continue
        vote = _separator_vote(text)
        if vote:
            votes[vote] += 1
    if votes[","] == votes["."]:
        return None
    return "," if votes[","] > votes["."] else "."
