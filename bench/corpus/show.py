"""Print a corpus sheet as a labeler sees it: row numbers and column letters.

    python bench/corpus/show.py dev/files/NAME.csv [--rows 1-60] [--width 18]

Rows are 1-based spreadsheet rows (a CSV's record number), columns are
letters, exactly as labels name them. CSV, TSV and XLSX go through the
project's own reader; other formats through python-calamine, row for row.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from bench.corpus.labels import CORPUS  # noqa: E402
from catalog.extraction.text import col_letter  # noqa: E402  the letters labels use


def sheets_of(path: Path) -> list[tuple[str, list[list[str]]]]:
    """(name, rows) per sheet; rows[i] is spreadsheet row i + 1."""
    from catalog.reading import read_table
    from catalog.errors import UnreadableSheet

    try:
        table = read_table(path, filename=path.name)
        return [(s.name, s.rows) for s in table.sheets]
    except UnreadableSheet:
        pass
    import python_calamine

    try:
        book = python_calamine.CalamineWorkbook.from_path(str(path))
    except Exception:  # noqa: BLE001 - a raw BIFF2 stream or a damaged XLS: xlrd reads those
        import xlrd

        wb = xlrd.open_workbook(str(path), ignore_workbook_corruption=True)
        return [
            (
                sh.name,
                [["" if v in (None, "") else str(v) for v in sh.row_values(r)] for r in range(sh.nrows)],
            )
            for sh in wb.sheets()
        ]
    out = []
    for name in book.sheet_names:
        rows = book.get_sheet_by_name(name).to_python(skip_empty_area=False)
        out.append((name, [["" if v is None else str(v) for v in r] for r in rows]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("file", help="path under ../shared/corpus/")
    ap.add_argument("--rows", default="1-80")
    ap.add_argument("--width", type=int, default=18)
    ap.add_argument("--sheet", type=int, default=None)
    a = ap.parse_args()
    lo, _, hi = a.rows.partition("-")
    lo, hi = int(lo), int(hi or lo)
    for si, (_name, rows) in enumerate(sheets_of(CORPUS / a.file)):
        if a.sheet is not None and si != a.sheet:
            continue
        print(f"== sheet {si} ({len(rows)} rows)")
        width = max((len(r) for r in rows), default=0)
        print("      " + " | ".join(col_letter(c).ljust(a.width) for c in range(width)))
        for n in range(lo, min(hi, len(rows)) + 1):
            cells = rows[n - 1]
            print(f"{n:5d} " + " | ".join(c.replace("\n", " ")[: a.width].ljust(a.width) for c in cells))


if __name__ == "__main__":
    main()
