"""Write a 100,000-row XLSX and a 100,000-row CSV price list for the speed benchmark.

python bench/make_big_sheets.py OUT_DIR [--rows N]
"""

from __future__ import annotations

import argparse
import csv
import random
from pathlib import Path

HEADER = ["Item code", "Description", "Unit", "Pack", "Unit price (EUR)", "Stock"]
UNITS = ["each", "kg", "box", "pcs", "l", "m"]


def rows(n: int, seed: int = 7):
    rnd = random.Random(seed)
    for i in range(n):
        if i % 500 == 0:
            yield [f"Section {i // 500}", "", "", "", "", ""]
        yield [
            f"SKU-{i:07d}",
            f"Product number {i} {rnd.choice(['steel', 'brass', 'plastic'])} {rnd.randint(1, 99)}mm",
            rnd.choice(UNITS),
            rnd.choice(["", "box of 12", "VE 10", "6"]),
            round(rnd.uniform(0.1, 5000), 2),
            rnd.randint(0, 500),
        ]


def write_csv(path: Path, n: int) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["ACME price list 2026"])
        w.writerow([])
        w.writerow(HEADER)
        for r in rows(n):
            w.writerow(r)
    return path


def write_xlsx(path: Path, n: int) -> Path:
    import openpyxl

    wb = openpyxl.Workbook(write_only=True)
    ws = wb.create_sheet("Prices")
    ws.append(["ACME price list 2026"])
    ws.append([])
    ws.append(HEADER)
    for r in rows(n):
        ws.append([v if v != "" else None for v in r])
    wb.save(path)
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    print(write_xlsx(args.out / "big.xlsx", args.rows))
    print(write_csv(args.out / "big.csv", args.rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
