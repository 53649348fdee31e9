"""Choosing among legacy code pages by the language the text is written in.

Bytes that are not UTF-8 decode without error in several single-byte code
pages, and a statistical detector may pick a neighbour (cp1250 for an Italian
cp1252 file: "velocitŕ"). The rule here: the right code page is the one whose
reading uses the letters of one language's alphabet; a reading that mixes
letters no single language writes together (Italian read as cp1250 gives
Slovak "ŕ" beside Czech "ě"), or Latin and Cyrillic letters in one word, or
a word in odd case ("хУРМА"), is wrong. Ties go to the most common code page
in ``CANDIDATES`` order.
"""

from __future__ import annotations

import re

CANDIDATES = ("cp1252", "cp1251", "cp1250", "cp1254", "iso8859_2", "koi8_r")
SAMPLE_BYTES = 200_000

_CYRILLIC = "".join(chr(c) for c in range(0x430, 0x460)) + "ґ"
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
    "turkish": "çğıöşüâî",
    "cyrillic": _CYRILLIC,
}


_WORD = re.compile(r"[^\W\d_]++")


def _plausible(word: str) -> bool:
    """One script per word, and lower, UPPER or Capitalized case."""
    cyrillic = any(ch.lower() in _CYRILLIC for ch in word)
    latin = any(ch.isascii() or ch.lower() not in _CYRILLIC for ch in word)
    if cyrillic and latin:
        return False
    return word.islower() or word.isupper() or (word[0].isupper() and word[1:].islower())


def language_fit(text: str) -> float:
    """Share of the non-ASCII letters in ``text`` that one language's alphabet covers,
    in words that look like words (1.0: all)."""
    counts: dict[str, int] = {}
    odd = 0
    for word in _WORD.findall(text):
        if word.isascii():
            continue
        letters = [ch.lower() for ch in word if ord(ch) > 127]
        if not _plausible(word):
            odd += len(letters)
            continue
        for low in letters:
            counts[low] = counts.get(low, 0) + 1
    total = sum(counts.values()) + odd
    if not total:
        return 1.0
    return max(sum(n for ch, n in counts.items() if ch in letters) for letters in ALPHABETS.values()) / total


def best_code_page(data: bytes, preferred: str | None = None) -> str:
    """The legacy code page whose reading of ``data`` fits one language best
    (``preferred``, the detector's choice, when nothing decodes)."""
    sample = data[:SAMPLE_BYTES]
    scored = []
    for encoding in CANDIDATES:
        try:
            text = sample.decode(encoding)
        except UnicodeDecodeError:
            continue
        scored.append((language_fit(text), encoding))
    if not scored:
        return preferred or "latin-1"
    top = max(fit for fit, _e in scored)
    return next(e for fit, e in scored if fit >= top - 1e-9)
