"""Text helpers shared by the extractor: bounded cell text, folding, phrases.

Every pattern in this package runs on text capped by ``cap`` (Excel's own
limit of 32,767 characters per cell) and is written so that it cannot
backtrack super-linearly: repeated classes are possessive (``\\d++``) or
preceded by a look-behind that stops a search from restarting inside a run.
"""

from __future__ import annotations

import re
import unicodedata

MAX_CELL_CHARS = 32_767  # Excel's own limit for one cell

_FOLD_CACHE: dict[str, str] = {}
_FOLD_CACHE_SIZE = 50_000  # folded short texts kept; emptied when full
_SPACE_RUN = re.compile(r"[\s_]++")


def cap(text: str) -> str:
    """Cell text cut to ``MAX_CELL_CHARS`` before any pattern sees it."""
    return text if len(text) <= MAX_CELL_CHARS else text[:MAX_CELL_CHARS]


def fold(text: str) -> str:
    """Lower-case, accents and invisible format characters (direction marks, zero-width
    spaces, a byte order mark) removed, '_' and runs of space collapsed."""
    cached = _FOLD_CACHE.get(text)
    if cached is not None:
        return cached
    text = cap(text)
    if text.isascii():  # nothing to decompose, no accent or format character
        out = text.lower()
    else:
        decomposed = unicodedata.normalize("NFKD", text)
        out = "".join(
            ch for ch in decomposed if not unicodedata.combining(ch) and unicodedata.category(ch) != "Cf"
        )
        out = out.casefold().replace("ı", "i")
    out = _SPACE_RUN.sub(" ", out).strip()
    if len(text) < 200:
        if len(_FOLD_CACHE) >= _FOLD_CACHE_SIZE:
            _FOLD_CACHE.clear()
        _FOLD_CACHE[text] = out
    return out


# A date or a period that keys a row: "2025-07-04", "17.06.2021 00:00", "2011-1"
# (a half-year), "2011 q2". The year is a calendar year, so a code such as
# "4010-1" is no period.
_PERIOD = re.compile(
    r"(?:(?:19|20)\d\d(?:[-./]\d{1,2}){1,2}|\d{1,2}[-./]\d{1,2}[-./](?:19|20)?\d\d|(?:19|20)\d\d\s*+[qh]\d)"
    r"(?:[ t]\d{1,2}:\d\d(?::\d\d)?+\S*+)?+"
)


def is_period(text: str) -> bool:
    return bool(text) and len(text) <= 30 and bool(_PERIOD.fullmatch(fold(text).strip()))


def phrase_regex(phrases) -> re.Pattern:
    """Whole-word match of any phrase (folded); literal alternatives only."""
    alts = sorted({re.escape(fold(p)) for p in phrases}, key=len, reverse=True)
    return re.compile(r"(?<![\w])(?:" + "|".join(alts) + r")(?![\w])")


def col_letter(col: int) -> str:
    """0-based column index -> spreadsheet letters (0 -> 'A', 27 -> 'AB')."""
    out = ""
    col += 1
    while col:
        col, rem = divmod(col - 1, 26)
        out = chr(65 + rem) + out
    return out


def col_index(letters: str) -> int | None:
    """Spreadsheet letters -> 0-based column index, None if not letters."""
    letters = (letters or "").strip().upper()
    if not letters or not letters.isascii() or not letters.isalpha() or len(letters) > 3:
        return None
    n = 0
    for ch in letters:
        n = n * 26 + (ord(ch) - 64)
    return n - 1


def cell(row: list[str], col: int | None) -> str:
    return row[col] if col is not None and 0 <= col < len(row) else ""
