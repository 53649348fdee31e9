"""Every real XLS, XLSB and ODS sheet of the development corpus reads, and the
item lists among them give items (needs ../shared/corpus/dev)."""

import csv
import functools
from pathlib import Path

import pytest

from catalog.errors import NotAnItemList
from catalog.extraction import extract_items
from catalog.readers import detect
from catalog.reading import read_table

DEV = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "dev"
FILES = (
    sorted(p.name for p in (DEV / "files").iterdir() if p.suffix.lower() in (".xls", ".xlsb", ".ods"))
    if DEV.is_dir()
    else []
)

pytestmark = pytest.mark.skipif(not DEV.is_dir(), reason="corpus folder ../shared/corpus/dev is absent")


@functools.cache
def item_lists() -> set[str]:
    with open(DEV / "SOURCES.tsv", newline="", encoding="utf-8") as f:
        return {row["file"] for row in csv.DictReader(f, delimiter="\t") if row["is_item_list"] == "yes"}


@pytest.mark.parametrize("name", FILES)
def test_real_legacy_sheet_reads_without_error(name):
    table = read_table(DEV / "files" / name, filename=name)
    assert any(sheet.rows for sheet in table.sheets)


def test_corpus_has_the_legacy_formats():
    assert len(FILES) == 31


# Item lists that read fine but that the extractor refuses today (its rules,
# not the reading, decide): marked so the day they extract, the mark goes.
EXTRACTION_GAPS: set[str] = set()


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason="read, but refused by the extractor"))
        if n in EXTRACTION_GAPS
        else n
        for n in FILES
    ],
)
def test_real_legacy_sheet_reads_and_its_items_are_extracted(name):
    table = read_table(DEV / "files" / name, filename=name)
    assert any(sheet.rows for sheet in table.sheets)
    try:
        items = extract_items(table).items
    except NotAnItemList:
        assert name not in item_lists()
        return
    if name in item_lists():
        assert items


def test_an_xlsx_named_xls_in_the_corpus_is_told_by_its_bytes():
    told = {name: detect((DEV / "files" / name).read_bytes(), filename=name) for name in FILES}
    assert [n for n in FILES if n.endswith(".xls") and told[n] == "xlsx"] != []
    assert {told[n] for n in FILES if n.endswith(".xlsb")} == {"xlsb"}
    assert {told[n] for n in FILES if n.endswith(".ods")} == {"ods"}
