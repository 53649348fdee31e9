"""Rows per second and peak memory of read_table + extract_items + validate_items,
against a bare openpyxl read-only pass / csv.reader pass over the same files;
and the XLSX readers side by side: the project's streaming reader
(read_table alone), openpyxl read-only, and python-calamine (run from the
peers' virtualenv of bench/requirements-peers.txt, since the app does not
depend on it).

    python bench/parse_speed.py [--rows N] [--keep DIR] [--no-calamine]

Then XLS (60,000 rows at most), ODS, a text PDF (45 lines a page) and the
development corpus's XLSB: read_table against the reading library alone
(xlrd, python-calamine, pdfplumber).

Each measurement runs in its own child process; its peak RSS is that child's
ru_maxrss. Goals: extractor rows/s >= 0.5 x bare rows/s; read_table on the
XLSX >= 2 x openpyxl read-only; peak RSS < 300 MB.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CHILD = r"""
import csv, json, resource, sys, time
sys.path.insert(0, {repo!r})
mode, path = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
rows = 0
if mode == "bare-xlsx":
    import openpyxl
    wb = openpyxl.load_workbook(path, read_only=True, data_only=True)
    for ws in wb.worksheets:
        for row in ws.iter_rows(values_only=True):
            rows += 1
    wb.close()
elif mode == "calamine":
    from python_calamine import CalamineWorkbook
    wb = CalamineWorkbook.from_path(path)
    for name in wb.sheet_names:
        for row in wb.get_sheet_by_name(name).to_python():
            rows += 1
elif mode == "xlrd":
    import xlrd
    book = xlrd.open_workbook(path, formatting_info=True, on_demand=True, logfile=open("/dev/null", "w"))
    for i in range(book.nsheets):
        ws = book.sheet_by_index(i)
        for r in range(ws.nrows):
            ws.row_values(r)
            rows += 1
elif mode == "pdfplumber":
    import pdfplumber
    with pdfplumber.open(path) as pdf:
        for page in pdf.pages:
            words = page.extract_words()
            rows += len(set(round(w["top"]) for w in words))
            page.close()
elif mode == "read":
    from catalog.reading import read_table
    table = read_table(path, filename=path.rsplit("/", 1)[-1])
    rows = sum(len(s.rows) for s in table.sheets)
elif mode == "bare-csv":
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.reader(f):
            rows += 1
else:
    from catalog.reading import read_table
    from catalog.extraction import extract_items
    from catalog.validation import validate_items
    table = read_table(path, filename=path.rsplit("/", 1)[-1])
    rows = sum(len(s.rows) for s in table.sheets)
    items = validate_items(extract_items(table).items, table)
elapsed = time.perf_counter() - t0
print(json.dumps({{"rows": rows, "seconds": elapsed,
                  "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def measure(mode: str, path: Path, python: str = sys.executable) -> dict:
    out = subprocess.run(
        [python, "-c", CHILD.format(repo=str(REPO)), mode, str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, help="write the big sheets here and keep them")
    parser.add_argument("--no-calamine", action="store_true", help="skip python-calamine")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO / "bench"))
    from make_big_sheets import write_csv, write_xlsx

    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        files = {
            "xlsx": write_xlsx(folder / "big.xlsx", args.rows),
            "csv": write_csv(folder / "big.csv", args.rows),
        }
        worst_ratio, worst_rss = None, 0.0
        for kind, path in files.items():
            bare = measure(f"bare-{kind}", path)
            full = measure("extract", path)
            bare_rate = bare["rows"] / bare["seconds"]
            full_rate = full["rows"] / full["seconds"]
            ratio = full_rate / bare_rate
            worst_ratio = ratio if worst_ratio is None else min(worst_ratio, ratio)
            worst_rss = max(worst_rss, full["maxrss_mb"])
            print(f"{kind:5s} {path.stat().st_size / 1e6:6.1f} MB file, {full['rows']} rows")
            print(
                f"      bare pass : {bare_rate:10,.0f} rows/s  ({bare['seconds']:.2f} s, peak RSS {bare['maxrss_mb']:.0f} MB)"
            )
            print(
                f"      extractor : {full_rate:10,.0f} rows/s  ({full['seconds']:.2f} s, peak RSS {full['maxrss_mb']:.0f} MB)"
                "  [read_table + extract_items + validate_items]"
            )
            print(f"      ratio     : {ratio:.2f}")
        readers = [
            ("read_table (streaming expat reader)", measure("read", files["xlsx"])),
            ("openpyxl read-only, values only", measure("bare-xlsx", files["xlsx"])),
        ]
        if not args.no_calamine:
            readers.append(
                ("python-calamine (values only: no number formats)", measure("calamine", files["xlsx"]))
            )
        base = readers[1][1]["rows"] / readers[1][1]["seconds"]
        print("\nXLSX readers on the same file:")
        for label, m in readers:
            rate = m["rows"] / m["seconds"]
            print(
                f"      {label:52s} {rate:10,.0f} rows/s  peak RSS {m['maxrss_mb']:4.0f} MB  "
                f"x{rate / base:.2f} of openpyxl"
            )
        read_ratio = readers[0][1]["rows"] / readers[0][1]["seconds"] / base
        print(f"read_table / openpyxl read-only on the XLSX: {read_ratio:.2f} (goal >= 2)")
        worst_rss = max(worst_rss, readers[0][1]["maxrss_mb"])
        print(f"peak RSS of the extractor: {worst_rss:.0f} MB (goal < 300 MB)")
        print(
            f"ratio (extractor rows/s / bare rows/s), worst of xlsx and csv: {worst_ratio:.2f} (goal >= 0.5)"
        )
        other_formats(folder, args.rows)
    return 0


def other_formats(folder: Path, rows: int) -> None:
    """XLS, ODS, XLSB and text PDF: read_table against the reading library alone."""
    from tests.catalog.formatgen import ods_bytes, ods_cell, ods_row, pdf_bytes, xls_bytes

    n = min(rows, 60_000)  # an XLS sheet holds 65,536 rows
    body = [["SKU", "Description", "Unit", "Price", "Currency"]] + [
        [f"S-{r}", f"Item {r}", "kg", r + 0.5, "EUR"] for r in range(n)
    ]
    (folder / "big.xls").write_bytes(
        xls_bytes({"Prices": body}, formats={("Prices", r, 3): "0.00" for r in range(1, n + 1)})
    )
    ods_rows = "".join(
        ods_row([ods_cell(v) if not isinstance(v, float) else ods_cell(v, shown=f"{v:.2f}") for v in row])
        for row in body
    )
    (folder / "big.ods").write_bytes(ods_bytes({"Prices": ods_rows}))
    pages = [
        [
            (40, 40 + 16 * i, f"S-{p * 45 + i}"),
            (120, 40 + 16 * i, f"Item {p * 45 + i}"),
            (360, 40 + 16 * i, "kg"),
            (480, 40 + 16 * i, f"{i}.50"),
        ]
        for p in range(max(1, n // 45 // 20))
        for i in range(45)
    ]
    pages = [pages[i : i + 45] for i in range(0, len(pages), 45)]
    (folder / "big.pdf").write_bytes(pdf_bytes([[c for line in page for c in line] for page in pages]))
    runs = [
        (
            "XLS",
            folder / "big.xls",
            [("xlrd, number formats", "xlrd"), ("python-calamine, values", "calamine")],
        ),
        ("ODS", folder / "big.ods", [("python-calamine, values", "calamine")]),
        ("PDF", folder / "big.pdf", [("pdfplumber words, lines counted", "pdfplumber")]),
    ]
    xlsb = REPO.parent / "shared" / "corpus" / "dev" / "files" / "ar_sa_car_prices_geely.xlsb"
    if xlsb.exists():
        runs.append(("XLSB", xlsb, [("python-calamine, values", "calamine")]))
    print("\nOther formats: read_table against the reading library alone")
    for kind, path, libraries in runs:
        ours = measure("read", path)
        rate = ours["rows"] / max(ours["seconds"], 1e-9)
        print(f"{kind:5s} {path.stat().st_size / 1e6:6.1f} MB, {ours['rows']} rows")
        print(f"      read_table {'':36s} {rate:10,.0f} rows/s  peak RSS {ours['maxrss_mb']:4.0f} MB")
        for label, mode in libraries:
            m = measure(mode, path)
            lib = m["rows"] / max(m["seconds"], 1e-9)
            print(
                f"      {label:47s} {lib:10,.0f} rows/s  peak RSS {m['maxrss_mb']:4.0f} MB  "
                f"(read_table x{rate / lib:.2f})"
            )


if __name__ == "__main__":
    raise SystemExit(main())
