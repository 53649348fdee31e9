"""CSV and TSV: the encoding and the delimiter are guessed; one sheet, ``Sheet1``.

Blank lines are counted while streaming, never stored: a row number is the
record's number in the file.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from catalog.errors import UnreadableSheet
from catalog.readers.common import (
    CSV_SHEET_NAME,
    MSG_CELL_TOO_LONG,
    MSG_TOO_MANY_COLUMNS,
    MSG_TOO_MANY_ROWS,
    ReadLimits,
    Sheet,
    Table,
)

DELIMITERS = (",", ";", "\t", "|")


MSG_CUT_UTF16 = (
    "the file is UTF-16 text that ends in the middle of a character (an odd "
    "number of bytes): it was cut short; save or export it again"
)
MSG_NUL = (
    "line {line} holds a NUL character, which no text cell can: the file is not a "
    "plain text CSV; save it again as CSV or XLSX"
)


# Single-byte pages the detector weighs against the multi-byte ones (with
# Thai cp874 among them it took Big5 text for Thai).
DETECTED_SINGLE_BYTE = ("cp1251", "cp1252", "cp1250", "koi8_r", "latin_1", "iso8859_2", "cp1254")
# What a spreadsheet saves as "CSV" on a Korean, Chinese (simplified and
# traditional) or Japanese Windows.
MULTI_BYTE = ("cp949", "gb18030", "cp950", "cp932")


def _decode(data: bytes) -> str:
    text = _decode_bytes(data)
    # A NUL can be neither stored nor published (PostgreSQL text refuses it):
    # refused here, every time, rather than failing each attempt later.
    at = text.find("\x00")
    if at >= 0:
        raise UnreadableSheet(MSG_NUL.format(line=text.count("\n", 0, at) + 1))
    return text


def _decode_bytes(data: bytes) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise UnreadableSheet(MSG_CUT_UTF16) from None
    if b"\x00" in data[:4096]:
        raise UnreadableSheet(
            "the bytes are not text (NUL bytes found) and not an XLSX workbook: not a CSV file"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    from catalog.codepages import SAMPLE_BYTES, best_code_page, east_asian_fit

    # Legacy code pages only: by now we know it is not UTF-8. The detector
    # tells single-byte from multi-byte; among single-byte pages the language
    # decides (best_code_page).
    best = from_bytes(data[:SAMPLE_BYTES], cp_isolation=[*DETECTED_SINGLE_BYTE, *MULTI_BYTE]).best()
    encoding = best.encoding if best is not None else "cp1252"
    if encoding in MULTI_BYTE:
        text = data[:SAMPLE_BYTES].decode(encoding, errors="replace")
        # Most of it must read as East Asian text: a Western file with one
        # accented word can decode in GB18030 too.
        if east_asian_fit(text) > 0.5:
            # A stray byte past the sample shows as U+FFFD in its cell, where
            # a single-byte page would garble every character of the file.
            return data.decode(encoding, errors="replace")
    # The detector can pick a neighbouring code page; the language decides.
    encoding = best_code_page(data, preferred=encoding)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _sniff_delimiter(text: str, tab_hint: bool) -> str:
    sample = text[:65536].splitlines()[:50]
    best, best_score = ("\t" if tab_hint else ","), (-1.0, 0)
    for delim in DELIMITERS:
        counts = [len(r) for r in csv.reader(sample, delimiter=delim) if any(c.strip() for c in r)]
        if not counts:
            continue
        mode = max(set(counts), key=counts.count)
        if mode < 2:
            continue
        score = (counts.count(mode) / len(counts), mode)
        if tab_hint and delim == "\t":
            score = (score[0] + 0.01, score[1])
        if score > best_score:
            best, best_score = delim, score
    return best


def read(data: bytes, *, limits: ReadLimits, filename: str = "") -> Table:
    tab_hint = Path(filename).suffix.lower() in (".tsv", ".tab")
    # Trailing blank lines cost nothing (stripped at C speed); blank lines
    # between values are counted while streaming, never stored.
    text = _decode(data).rstrip()
    del data
    delim = _sniff_delimiter(text, tab_hint)
    rows: list[list[str]] = []
    max_rows, max_cols, max_chars = limits.max_rows, limits.max_columns, limits.max_cell_chars
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim)
    i = 0
    try:
        for i, raw in enumerate(reader, start=1):
            # Blank lines are counted, not stored: they become rows only when
            # a value follows them, so trailing blank lines cost nothing.
            if not raw or not any(raw):
                continue
            row = [c.strip() if len(c) <= max_chars else c.strip()[:max_chars] for c in raw]
            while row and not row[-1]:
                row.pop()
            if not row:
                continue
            if i > max_rows:
                raise UnreadableSheet(MSG_TOO_MANY_ROWS.format(sheet=CSV_SHEET_NAME, limit=max_rows))
            if len(row) > max_cols:
                raise UnreadableSheet(
                    MSG_TOO_MANY_COLUMNS.format(sheet=CSV_SHEET_NAME, row=i, col=len(row), limit=max_cols)
                )
            if i > len(rows) + 1:
                rows.extend([] for _ in range(i - 1 - len(rows)))
            rows.append(row)
    except csv.Error as exc:
        # The csv module refuses fields over its own limit (131,072 characters).
        raise UnreadableSheet(MSG_CELL_TOO_LONG.format(row=i + 1, limit=csv.field_size_limit())) from exc
    return Table(sheets=[Sheet(name=CSV_SHEET_NAME, rows=rows)])
