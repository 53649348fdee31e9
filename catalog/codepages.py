"""Choosing among legacy code pages by the language the text is written in.

Bytes that are not UTF-8 decode without error in several single-byte code
pages, and a statistical detector may pick a neighbour (cp1250 for an Italian
cp1252 file: "velocitŕ"). The rule here: the right code page is the one whose
reading uses the letters of one language's alphabet; a reading that mixes
letters no single language writes together (Italian read as cp1250 gives
Slovak "ŕ" beside Czech "ě"), or two scripts in one word (Latin and
Cyrillic, Latin and Greek), or a word of a cased script in odd case
("хУРМА"), or a sign, a digit or another script's mark inside a word
("Sanda³y", "f๖hnen"), is wrong. Ties go to a caseless script (Hebrew,
Arabic, Thai) over a cased one whose letters are all of one case (Hebrew
read as cp1251 is lower-case Cyrillic), then to the first page in
``CANDIDATES`` order.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter

# Each language's Windows code page, then the ISO and KOI8 pages; ties go to the first.
CANDIDATES = (
    "cp1252",  # Western Europe
    "cp1251",  # Cyrillic
    "cp1250",  # Central Europe
    "cp1254",  # Turkish
    "cp1257",  # Baltic
    "cp1253",  # Greek
    "cp1255",  # Hebrew
    "cp1256",  # Arabic
    "cp874",  # Thai
    "iso8859_2",
    "koi8_r",
)
SAMPLE_BYTES = 200_000


def _span(first: int, last: int) -> str:
    return "".join(chr(c) for c in range(first, last + 1))


# The letters beyond ASCII that each language writes (lower case).
ALPHABETS = {
    "italian": "àèéìíòóùú",
    "french": "àâæçéèêëîïôœùûüÿ",
    "spanish": "áéíóúñü",
    "portuguese": "áâãàçéêíóôõú",
    "german": "äöüß",
    "dutch": "áéíóúàèëïöü",
    "catalan": "àçéèíïòóúü",
    "nordic": "åäöæøé",
    "czech": "áčďéěíňóřšťúůýž",
    "slovak": "áäčďéíĺľňóôŕšťúýž",
    "polish": "ąćęłńóśźż",
    "hungarian": "áéíóöőúüű",
    "croatian": "čćđšž",
    "romanian": "ăâîșțşţ",
    "turkish": "çğıöşüâîİ",  # "İ" lowers to two characters: kept as it is
    "lithuanian": "ąčęėįšųūž",
    "latvian": "āčēģīķļņšūž",
    "estonian": "äõöüšž",
    "cyrillic": _span(0x430, 0x45F) + "ґ",
    "greek": _span(0x3AC, 0x3CE) + "ΐ",
    "hebrew": _span(0x5D0, 0x5EA),
    "arabic": _span(0x621, 0x64A) + _span(0x671, 0x6D3),
    "thai": _span(0xE01, 0xE2E) + _span(0xE30, 0xE33) + _span(0xE40, 0xE46),
}
# Scripts whose words are written in lower, UPPER or Capitalized case.
CASED = {"LATIN", "CYRILLIC", "GREEK"}
_SCRIPTS = CASED | {"HEBREW", "ARABIC", "THAI"}


_WORD = re.compile(r"[^\W\d_]++")


@functools.lru_cache(maxsize=4096)
def _script(ch: str) -> str | None:
    """The script of a letter ("LATIN", "GREEK", ...), or None for a sign such as "º"."""
    if ch.isascii():
        return "LATIN"
    word = unicodedata.name(ch, "").split(" ", 1)[0]
    return word if word in _SCRIPTS else None


def _plausible(word: str) -> bool:
    """One script per word, and in a cased script lower, UPPER or Capitalized case."""
    scripts = {_script(ch) for ch in word} - {None}
    if len(scripts) > 1:
        return False
    if not scripts & CASED:
        return True
    return word.islower() or word.isupper() or (word[0].isupper() and word[1:].islower())


def _lower(ch: str) -> str:
    low = ch.lower()
    return low if len(low) == 1 else ch


# Signs, digits or another script's marks beyond ASCII between two letters
# ("Sanda³y": Polish "ł" read in cp1252; "Gr๖฿e": German "öß" read in cp874)
# is a letter of another code page. A word's own script's marks (Thai
# vowels, Hebrew points) belong in it.
_SIGN_IN_WORD = re.compile(r"(?<=[^\W\d_])(?:(?![^\W\d_])[^\x00-\x7f\s])++(?=[^\W\d_])")


def _signs_in_words(text: str) -> int:
    odd = 0
    for m in _SIGN_IN_WORD.finditer(text):
        before = _script(text[m.start() - 1])
        for ch in m.group():
            if unicodedata.category(ch) == "Mn":
                mark = unicodedata.name(ch, "").split(" ", 1)[0]
                if mark not in _SCRIPTS or mark == before:
                    continue
            odd += 1
    return odd


def _reading(text: str) -> tuple[float, str]:
    """(the fit; "caseless" when most letters beyond ASCII are of a caseless
    script, "one case" when they are of a cased script and all of one case, else "")."""
    counts: dict[str, int] = {}
    odd = _signs_in_words(text)
    capitals = cased = 0
    for word, n in Counter(w for w in _WORD.findall(text) if not w.isascii()).items():
        letters = [ch for ch in word if not ch.isascii() and _script(ch)]
        if not _plausible(word):
            odd += n * len(letters)
            continue
        for ch in letters:
            low = _lower(ch)
            counts[low] = counts.get(low, 0) + n
            if _script(ch) in CASED:
                cased += n
                capitals += n * (ch != low)
    counted = sum(counts.values())
    total = counted + odd
    if not total:
        return 1.0, ""
    fit = max(sum(n for ch, n in counts.items() if ch in letters) for letters in ALPHABETS.values()) / total
    if counted > 2 * cased:
        return fit, "caseless"
    return fit, "one case" if cased and capitals in (0, cased) else ""


def language_fit(text: str) -> float:
    """Share of the non-ASCII letters in ``text`` that one language's alphabet covers,
    in words that look like words, less signs inside words (1.0: all)."""
    return _reading(text)[0]


def best_code_page(data: bytes, preferred: str | None = None) -> str:
    """The legacy code page whose reading of ``data`` fits one language best
    (``preferred``, the detector's choice, when nothing decodes).

    Hebrew read in cp1251 is lower-case Cyrillic (in KOI8-R, upper-case)
    that fits as well as the Hebrew: where readings tie, those whose
    letters are of a cased script and all of one case give way to one in a
    caseless script."""
    sample = data[:SAMPLE_BYTES]
    scored = []
    for encoding in CANDIDATES:
        try:
            text = sample.decode(encoding)
        except UnicodeDecodeError:
            continue
        scored.append((*_reading(text), encoding))
    if not scored:
        return preferred or "latin-1"
    top = max(fit for fit, _kind, _e in scored)
    tied = [(kind, e) for fit, kind, e in scored if fit >= top - 1e-9]
    caseless = [e for kind, e in tied if kind == "caseless"]
    if caseless and all(kind in ("caseless", "one case") for kind, _e in tied):
        return caseless[0]
    return tied[0][1]


# Hangul, kana, CJK ideographs, and the punctuation and full-width forms they are written with.
_EAST_ASIAN = re.compile(r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3\uf900-\ufaff\uff00-\uffef]")
_LATIN_LETTER = re.compile(r"[A-Za-z]")


def east_asian_fit(text: str) -> float:
    """Share of the characters beyond ASCII that read as Korean, Chinese or
    Japanese text: of those scripts, and not alone inside a Latin word (an
    English "naïve" read as GB18030 is "na鴳e")."""
    beyond = fit = 0
    for i, ch in enumerate(text):
        if ch.isascii() or ch.isspace():
            continue
        beyond += 1
        inside = (
            0 < i < len(text) - 1 and _LATIN_LETTER.match(text[i - 1]) and _LATIN_LETTER.match(text[i + 1])
        )
        fit += bool(_EAST_ASIAN.match(ch)) and not inside
    return fit / beyond if beyond else 0.0
