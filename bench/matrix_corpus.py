"""Price matrices on the labeled corpus: recognized, refused, or mistaken.

    python bench/matrix_corpus.py [--corpus DIR]

Reads every labeled file that the readers open (the labels are in
bench/corpus/labels/; the files stay in ../shared/corpus/) and runs the
built-in extractor on it. Per label kind it counts the files whose sheets
were proposed as a price matrix, refused, or read as an item list. For the
product matrices it also says whether the proposed body overlaps the
labeled one; the item lists turned into matrices are the mistakes that
matter (an ordinary list must never be read cell by cell). Then it applies
each matrix label's own mapping and counts the items and skipped cells.
Needs no database.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from catalog.errors import SheetError  # noqa: E402
from catalog.extraction import extract  # noqa: E402
from catalog.extraction.matrix import Matrix, matrix_parse, matrix_read  # noqa: E402
from catalog.reading import read_table  # noqa: E402

LABELS = REPO / "bench" / "corpus" / "labels"
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus"


def _outcome(extraction) -> str:
    kinds = [s.get("kind") for s in extraction.sheets if s.get("status") == "read"]
    if "matrix" in kinds:
        return "matrix"
    return "refused" if extraction.refusal else "item list"


def _overlaps(proposed: dict, labeled: dict) -> bool:
    a = Matrix.from_json(proposed)
    b = Matrix.from_json({**labeled, "row_labels": labeled["row_label_columns"]})
    rows = a.top <= (b.bottom or 10**9) and b.top <= (a.bottom or 10**9)
    return rows and a.left <= b.right and b.left <= a.right


def _labeled_mapping(table, label: dict) -> tuple[int, dict]:
    """(items, cells skipped) when each labeled matrix sheet is read with its labeled form."""
    items, skipped = 0, collections.Counter()
    for entry in label["sheets"]:
        block = entry.get("matrix")
        if not block or entry["sheet"] >= len(table.sheets):
            continue
        sheet = table.sheets[entry["sheet"]]
        form = {
            "row_labels": block["row_label_columns"],
            "column_header_rows": block["column_header_rows"][:2],
            "body": block["body"],
        }
        parsed, errors = matrix_parse(form, sheet)
        if parsed is None:
            skipped["not applicable: " + errors[0].split(":", 1)[1].strip()[:60]] += 1
            continue
        got = matrix_read(sheet, Matrix.from_json(parsed))
        items += len(got.items)
        skipped.update({k: v for k, v in got.counts.items() if k != "priced"})
    return items, dict(skipped)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args()
    tally: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    lines = []
    for path in sorted(LABELS.glob("*.json")):
        label = json.loads(path.read_text())
        if "file" not in label:
            continue
        file = args.corpus / label["file"]
        try:
            table = read_table(file, filename=file.name)
        except (SheetError, OSError) as exc:
            tally[label["kind"]]["not read"] += 1
            lines.append(f"{label['kind']:10} not read   {file.name}: {str(exc)[:60]}")
            continue
        extraction = extract(table)
        got = _outcome(extraction)
        tally[label["kind"]][got] += 1
        if label["kind"] in ("matrix", "rate_card") or got == "matrix":
            detail = ""
            if label["kind"] == "matrix":
                proposed = [s["matrix"] for s in extraction.sheets if s.get("matrix")]
                labeled = [s["matrix"] for s in label["sheets"] if s.get("matrix")]
                hit = any(_overlaps(p, m) for p in proposed for m in labeled)
                items, skipped = _labeled_mapping(table, label)
                detail = f"body overlaps label: {hit}; labeled mapping: {items} items, skipped {skipped}"
            lines.append(f"{label['kind']:10} {got:10} {file.name} {detail}")
    print("\n".join(lines))
    print()
    print(
        f"{'label kind':12} " + " ".join(f"{k:>10}" for k in ("matrix", "refused", "item list", "not read"))
    )
    for kind, counts in sorted(tally.items()):
        print(
            f"{kind:12} "
            + " ".join(f"{counts[k]:>10}" for k in ("matrix", "refused", "item list", "not read"))
        )


if __name__ == "__main__":
    main()
