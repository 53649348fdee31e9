"""Legacy code pages: is a CSV saved in its language's Windows code page read back as written?

    python bench/code_pages.py [--part development|test] [-v]

For every labeled corpus sheet whose text goes beyond ASCII, the text of its
first 400 rows is written as a semicolon CSV in the code page its language's
Windows saves "CSV" in (the language is the file name's prefix, as the
corpus names its files), then read by the project's CSV reader. A sheet
counts as right when every character comes back. Printed per part of the
corpus split, with the sheets read wrong under -v.

Then the hard case: an English list of 2,000 rows with one short phrase of
another language on every 40th or 400th row, in that language's code page
(the phrases are made up here). Needs no database.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.corpus.labels import CORPUS, split  # noqa: E402
from catalog.errors import UnreadableSheet  # noqa: E402
from catalog.readers.delimited import _decode_bytes  # noqa: E402
from catalog.reading import read_table  # noqa: E402

ROWS = 400
# The code page a spreadsheet saves "CSV" in on each language's Windows.
PAGE = {
    **dict.fromkeys(("en", "de", "fr", "es", "it", "pt", "nl", "da", "sv", "fi", "no", "id", "ms"), "cp1252"),
    **dict.fromkeys(("pl", "cs", "sk", "hu", "hr", "ro", "sl"), "cp1250"),
    **dict.fromkeys(("ru", "uk", "bg", "sr", "kk"), "cp1251"),
    **dict.fromkeys(("lt", "lv", "et"), "cp1257"),
    "tr": "cp1254",
    "el": "cp1253",
    "he": "cp1255",
    "ar": "cp1256",
    "th": "cp874",
    "ja": "cp932",
    "ko": "cp949",
    "zh": "gb18030",
}


def sheet_text(path: Path) -> str:
    table = read_table(path, filename=path.name)
    return "\n".join(
        ";".join(c.replace(";", " ").replace("\n", " ") for c in row)
        for sheet in table.sheets
        for row in sheet.rows[:ROWS]
    )


def run(files: list[str]) -> tuple[int, list[tuple[str, str, str]]]:
    """(sheets tried, [(file, code page, first word read wrong)])."""
    tried, wrong = 0, []
    for file in files:
        page = PAGE.get(Path(file).name.split("_")[0])
        path = CORPUS / file
        if page is None or not path.exists():
            continue
        try:
            text = sheet_text(path)
        except UnreadableSheet:
            continue
        data = text.encode(page, errors="ignore")
        text = data.decode(page)  # what the code page can hold
        if text.isascii():
            continue
        tried += 1
        got = _decode_bytes(data)
        if got != text:
            first = next((g for g, t in zip(got.split(), text.split(), strict=False) if g != t), "")
            wrong.append((file, page, first[:40]))
    return tried, wrong


# Made-up phrases per code page, each alone in an otherwise ASCII file.
SPARSE = {
    "cp1252": ["Ø 20 mm", "Größe Ø", "naïve", "Señor", "Café", "Crème brûlée", "Œuvre", "Ærø", "Zürich"],
    "cp1250": ["Łódź", "Zażółć gęślą", "Příliš žluťoučký", "Cena Kč"],
    "cp1251": ["Цена", "ГРУШИ", "Ёж", "Болт оцинкованный"],
    "cp1253": ["Τιμή", "ΒΙΔΑ", "Βίδα ανοξείδωτη"],
    "cp1255": ["מחיר", "בורג נירוסטה"],
    "cp1256": ["السعر", "برغي فولاذ"],
    "cp874": ["ราคา", "สกรูสแตนเลส"],
    "cp1257": ["Kaina Varžtas", "Šešiakampė", "Cena ķēde"],
    "cp1254": ["FİYAT", "Açıklama", "Vida paslanmaz çelik"],
}


def sparse() -> tuple[int, list[tuple[str, str, int]]]:
    """(files tried, [(code page, phrase, every n-th row)] read wrong)."""
    rows = [f"SKU{n},Stainless bolt M{n % 20} zinc plated,{n * 0.37:.2f}" for n in range(2000)]
    tried, wrong = 0, []
    for page, phrases in SPARSE.items():
        for phrase in phrases:
            for every in (40, 400):
                text = "\n".join(r + (f",{phrase}" if n % every == 0 else "") for n, r in enumerate(rows))
                tried += 1
                if _decode_bytes(text.encode(page)) != text:
                    wrong.append((page, phrase, every))
    return tried, wrong


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("development", "test"))
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    parts = split()
    for part in [args.part] if args.part else ["development", "test"]:
        tried, wrong = run(parts[part])
        print(f"{part} part: {tried - len(wrong)} of {tried} sheets read back as written")
        if args.verbose:
            for file, page, first in wrong:
                print(f"  {file} ({page}): {first!r}")
    tried, wrong = sparse()
    print(f"one phrase in an English list: {tried - len(wrong)} of {tried} files read back as written")
    if args.verbose:
        for page, phrase, every in wrong:
            print(f"  {phrase!r} ({page}) on every {every}th row")


if __name__ == "__main__":
    main()
