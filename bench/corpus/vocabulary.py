"""How much of the rules' header vocabulary the labeled corpus backs.

    python bench/corpus/vocabulary.py [-v] [--score]

A word of a list in ``catalog.extraction.headers.VOCABULARY`` is backed when
it appears, as ``classify_header`` matches it, in the header of a labeled
column of the list's role in at least two development files (``BACKING``
says which roles back which list; the statistics words back on the headers
of statistics tables, the total-row words on the rows of labeled sheets
that are not items). ``--score`` then runs the labeled corpus
(``bench/extraction_accuracy.py --corpus-only``) with only the backed words,
to show what the words the corpus does not back still do.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.corpus.labels import CORPUS, load_all, rows_of, split  # noqa: E402
from catalog.errors import UnreadableSheet  # noqa: E402
from catalog.extraction import headers  # noqa: E402
from catalog.extraction.layout import header_labels  # noqa: E402
from catalog.extraction.text import col_index, fold  # noqa: E402
from catalog.reading import read_table  # noqa: E402

MIN_FILES = 2
_MONEY = {"unit_price", "alt_price", "total"}
# Pattern name -> the labeled roles whose headers back its words.
BACKING = {
    "sku": {"sku"},
    "sku_weak": {"sku"},
    "desc": {"description"},
    "desc_weak": {"description"},
    "desc_not": None,  # any role but description
    "price": _MONEY,
    "price_strong": {"unit_price"},
    "price_secondary": {"alt_price", "total"},
    "price_not": None,  # any role but unit_price
    "unit": {"unit"},
    "pack": {"pack_size"},
    "currency": {"currency"},
    # The rules' "quantity" is any count beside the item, never read as a price.
    "quantity": {"quantity", "stock", "weight"},
    "vat": _MONEY,
}
_NOT = {"desc_not": "description", "price_not": "unit_price"}


def _texts(files: list[str]):
    """(header cells as (file, role, kind, folded text), other row cells as (file, folded text))."""
    labels = load_all()
    heads, others = [], []
    for f in files:
        lab = labels[f]
        try:
            table = read_table(CORPUS / lab["file"], filename=Path(lab["file"]).name)
        except UnreadableSheet:
            continue
        for sh in lab.get("sheets") or []:
            if sh["sheet"] >= len(table.sheets):
                continue
            rows = table.sheets[sh["sheet"]].rows
            hs = [h for h in sh.get("header_rows") or [] if h <= len(rows)]
            words = header_labels(rows, hs, table.sheets[sh["sheet"]].spans)
            for letter, role in (sh.get("columns") or {}).items():
                c = col_index(letter)
                text = words[c] if c < len(words) else ""
                if text:
                    heads.append((f, role, lab["kind"], fold(text)))
            if lab["kind"] == "statistics":
                heads += [(f, "other", "statistics", fold(t)) for h in hs for t in rows[h - 1] if t]
            items = set(rows_of(sh.get("item_rows")))
            for r in range(max(hs, default=0) + 1, len(rows) + 1):
                if r not in items:
                    others += [(f, fold(t)) for t in rows[r - 1] if t and len(t) <= headers.HEADER_CELL_MAX]
    return heads, others


def backed_vocabulary(files: list[str]) -> dict[str, tuple[str, ...]]:
    """Every list of ``headers.VOCABULARY`` cut to the words ``files`` back."""
    heads, others = _texts(files)
    out = {}
    for name, words in headers.VOCABULARY.items():
        keep = []
        for word in words:
            pattern = headers.phrases((word,))
            if name == "statistic":
                seen = {f for f, _r, kind, t in heads if kind == "statistics" and pattern.search(t)}
            elif name == "total_row":
                seen = {f for f, t in others if pattern.match(t)}
            else:
                roles = BACKING[name]
                seen = {
                    f
                    for f, role, _k, t in heads
                    if (role != _NOT[name] if roles is None else role in roles) and pattern.search(t)
                }
            if len(seen) >= MIN_FILES:
                keep.append(word)
        out[name] = tuple(keep)
    return out


def contradicted_words(files: list[str]) -> dict[str, tuple[str, ...]]:
    """Per list, the words whose development headers say another role more often than the list's,
    in at least ``MIN_FILES`` files: such a word points at the wrong column more often than the right
    one. Another money role (a second price, a total) neither backs nor contradicts a word."""
    heads, _others = _texts(files)
    out = {}
    for name, words in headers.VOCABULARY.items():
        roles = BACKING.get(name)
        if not roles:
            continue
        bad = []
        for word in words:
            pattern = headers.phrases((word,))
            hits = [(f, role) for f, role, _k, t in heads if pattern.search(t)]
            support = {f for f, role in hits if role in roles}
            against = {f for f, role in hits if role not in roles and role not in _MONEY}
            if len(against) >= MIN_FILES and len(against) > len(support):
                bad.append(word)
        out[name] = tuple(bad)
    return out


def _labeled_sheets(files: list[str]):
    """(file, the sheet's label, the sheet as read) of every labeled item-list sheet of
    ``files`` that the project reads, matrices left out."""
    labels = load_all()
    for f in files:
        lab = labels[f]
        if lab["kind"] != "item_list":
            continue
        try:
            table = read_table(CORPUS / lab["file"], filename=Path(lab["file"]).name)
        except UnreadableSheet:
            continue
        for sh in lab.get("sheets") or []:
            if sh["sheet"] < len(table.sheets) and not sh.get("matrix"):
                yield f, sh, table.sheets[sh["sheet"]]


def several_prices(files: list[str]) -> list[tuple[str, int, bool]]:
    """The labeled sheets whose header names two money columns or more as the price
    (``classify_header``): (file, sheet, does the strongest price word stand over the labeled
    price alone?). Where it seldom does, the header cannot choose between them
    (``rules_columns._doubts``)."""
    out = []
    for f, sh, sheet in _labeled_sheets(files):
        if not sh.get("header_rows"):
            continue
        words = header_labels(sheet.rows, sh["header_rows"], sheet.spans)
        named = {}
        for letter, role in (sh.get("columns") or {}).items():
            c = col_index(letter)
            got = headers.classify_header(words[c]) if role in _MONEY and c < len(words) else None
            if got and got[0] == "unit_price":
                named[letter] = (got[1], role)
        if len(named) < 2:
            continue
        strongest = max(strength for strength, _role in named.values())
        top = [role for strength, role in named.values() if strength == strongest]
        out.append((f, sh["sheet"], top == ["unit_price"]))
    return out


_NAMES = ("sku", "description")


def code_names(files: list[str]) -> list[tuple[str, int, str]]:
    """The labeled sheets whose only column naming the items (a SKU or a description, not both)
    mostly starts with a code (``columns.code_led``): (file, sheet, its labeled role). Where
    both roles occur, values cannot tell them apart and only the header can
    (``columns._code_names``)."""
    from catalog.extraction.column_model import column_values
    from catalog.extraction.columns import code_led

    out = []
    for f, sh, sheet in _labeled_sheets(files):
        named = [(letter, role) for letter, role in (sh.get("columns") or {}).items() if role in _NAMES]
        if len(named) != 1:
            continue
        letter, role = named[0]
        body = sheet.rows[sh["header_rows"][-1] :] if sh.get("header_rows") else sheet.rows
        if code_led(column_values(body, col_index(letter))[0]):
            out.append((f, sh["sheet"], role))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="list the backed words")
    parser.add_argument("--score", action="store_true", help="score the corpus with the backed words only")
    args = parser.parse_args(argv)
    backed = backed_vocabulary(split()["development"])
    total = sum(len(w) for w in headers.VOCABULARY.values())
    print(f"header words backed by {MIN_FILES} development files or more, per list:")
    for name, words in headers.VOCABULARY.items():
        print(f"  {name:>16s}: {len(backed[name]):>3d} of {len(words):>3d}")
        if args.verbose and backed[name]:
            print("      " + ", ".join(backed[name]))
    print(f"  {'all':>16s}: {sum(len(w) for w in backed.values()):>3d} of {total:>3d}")
    several = several_prices(split()["development"])
    print(
        f"development sheets whose header names two money columns or more price: {len(several)} "
        f"(in {len({f for f, _s, _ok in several})} files); the strongest price word stands over the "
        f"labeled price alone on {sum(ok for _f, _s, ok in several)}"
    )
    codes = code_names(split()["development"])
    print(
        "development sheets whose only name column holds codes: "
        + ", ".join(f"{sum(r == role for _f, _s, r in codes)} {role}" for role in _NAMES)
    )
    if args.score:
        from bench import extraction_accuracy

        headers.use_vocabulary(backed)
        print("\nthe labeled corpus with the backed words only:")
        return extraction_accuracy.main(["--corpus-only"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
