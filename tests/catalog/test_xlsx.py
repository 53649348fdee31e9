"""The streaming XLSX reader gives the cells openpyxl gives, and refuses what it must."""

import datetime as dt
import io
import zipfile

import openpyxl
import pytest
from openpyxl.cell.rich_text import CellRichText, TextBlock
from openpyxl.cell.text import InlineFont

from catalog.errors import UnreadableSheet
from catalog.reading import _cell_text, read_bytes
from catalog.readers.common import currency_from_number_format
from catalog.xlsx import Workbook, XlsxError, column_index, is_date_format


def _workbook_bytes(fill, *, date1904: bool = False) -> bytes:
    book = openpyxl.Workbook()
    book.epoch = openpyxl.utils.datetime.CALENDAR_MAC_1904 if date1904 else book.epoch
    fill(book)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _openpyxl_cells(data: bytes) -> dict[str, list[list[str]]]:
    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    return {
        ws.title: [[_cell_text(v) for v in row] for row in ws.iter_rows(values_only=True)]
        for ws in book.worksheets
    }


def _streamed_cells(data: bytes) -> dict[str, list[list[str]]]:
    book = Workbook(zipfile.ZipFile(io.BytesIO(data)))
    sheets = {}
    for ref in book.worksheets:
        rows: dict[int, dict[int, str]] = {}
        width = 0
        for index, cells in book.rows(ref):
            rows[index] = {col: _cell_text(value) for col, value, _, _ in cells}
            width = max(width, max(rows[index]) + 1)
        height = max(rows, default=0)
        sheets[ref.title] = [[rows.get(r, {}).get(c, "") for c in range(width)] for r in range(1, height + 1)]
    return sheets


def _trimmed(sheets: dict[str, list[list[str]]]) -> dict[str, list[list[str]]]:
    def row(cells):
        while cells and cells[-1] == "":
            cells = cells[:-1]
        return cells

    out = {}
    for title, rows in sheets.items():
        rows = [row(list(r)) for r in rows]
        while rows and not rows[-1]:
            rows.pop()
        out[title] = rows
    return out


def _mixed(book):
    ws = book.active
    ws.title = "Prices"
    ws.append(["Price list 2026"])
    ws.append([])
    ws.append(["SKU", "Description", "Unit", "Price", "Since", "In stock", "Total"])
    for i in range(1, 30):
        ws.append(
            [
                f"A-{i}",
                f"Item {i} ü€",
                "kg",
                i * 1.25,
                dt.date(2026, 1, i % 28 + 1),
                i % 2 == 0,
                f"=D{i + 3}*2",
            ]
        )
    ws["D5"].number_format = '"£"#,##0.00'
    ws["E40"] = dt.datetime(2026, 5, 1, 13, 30)
    ws["K50"] = "far away"
    ws["B6"] = CellRichText(["bold ", TextBlock(InlineFont(b=True), "part"), " tail"])
    other = book.create_sheet("Second")
    other["C3"] = 0.1 + 0.2
    other["A1"] = 10**16
    other["B2"] = "=1/0"


def test_streamed_cells_equal_openpyxls():
    data = _workbook_bytes(_mixed)
    assert _trimmed(_streamed_cells(data)) == _trimmed(_openpyxl_cells(data))


def test_dates_follow_the_1904_epoch():
    data = _workbook_bytes(lambda b: b.active.append([dt.date(2026, 3, 4)]), date1904=True)
    assert _streamed_cells(data)["Sheet"][0][0] == "2026-03-04"


def test_formula_cells_give_their_cached_value():
    data = _workbook_bytes(lambda b: b.active.append([2, 3, "=A1*B1"]))
    # openpyxl writes no cached value; a saved-by-Excel file has one: put it in place.
    patched = _replace_part(
        data,
        "xl/worksheets/sheet1.xml",
        lambda xml: xml.replace(b"<f>A1*B1</f><v></v>", b"<f>A1*B1</f><v>6</v>").replace(
            b"<f>A1*B1</f><v />", b"<f>A1*B1</f><v>6</v>"
        ),
    )
    assert _streamed_cells(patched)["Sheet"][0] == ["2", "3", "6"]
    book = Workbook(zipfile.ZipFile(io.BytesIO(patched)))
    ((_, cells),) = list(book.rows(book.worksheets[0]))
    assert [formula for *_, formula in cells] == [False, False, True]
    sheet = read_bytes(patched, filename="f.xlsx").sheets[0]
    assert sheet.raw["1:2"] == {"value": "6", "formula": True}


def test_number_formats_by_style_id():
    def fill(book):
        book.active["A1"] = 3.5
        book.active["A1"].number_format = "[$€-407] #,##0.00"

    book = Workbook(zipfile.ZipFile(io.BytesIO(_workbook_bytes(fill))))
    ((_, cells),) = list(book.rows(book.worksheets[0]))
    ((_, _, style, _),) = cells
    assert book.style_formats[style] == "[$€-407] #,##0.00"


def _replace_part(data: bytes, name: str, change) -> bytes:
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            body = src.read(info)
            dst.writestr(info.filename, change(body) if info.filename == name else body)
    return out.getvalue()


def test_a_dtd_after_the_prolog_window_is_refused():
    data = _workbook_bytes(lambda b: b.active.append(["x"]))
    comment = b"<!--" + b"x" * 5000 + b"-->"
    patched = _replace_part(
        data,
        "xl/worksheets/sheet1.xml",
        lambda xml: b'<?xml version="1.0"?>' + comment + b'<!DOCTYPE w [<!ENTITY a "aaaa">]>' + xml,
    )
    with pytest.raises(UnreadableSheet, match="DTD or entities"):
        read_bytes(patched, filename="bomb.xlsx")


def test_broken_sheet_xml_is_a_plain_reason():
    data = _workbook_bytes(lambda b: b.active.append(["x"]))
    patched = _replace_part(data, "xl/worksheets/sheet1.xml", lambda xml: xml[: len(xml) // 2])
    with pytest.raises(UnreadableSheet, match="not well-formed XML"):
        read_bytes(patched, filename="broken.xlsx")


def test_column_letters():
    assert [column_index(r) for r in ("A1", "Z9", "AA1", "XFD1048576")] == [0, 25, 26, 16383]
    with pytest.raises(XlsxError):
        column_index("1A")


@pytest.mark.parametrize(
    ("fmt", "is_date"),
    [
        ("General", False),
        ("0.00", False),
        ('"£"#,##0.00', False),
        ("[Red]0.00", False),
        ("mm-dd-yy", True),
        ("d-mmm-yy", True),
        ("h:mm", True),
        ('"Day "0', False),
        ("[$-409]mmmm d, yyyy", True),
        ("@", False),
    ],
)
def test_date_formats(fmt, is_date):
    assert is_date_format(fmt) is is_date


def test_a_name_merged_over_its_variants_rows_names_each_of_them():
    def fill(book):
        ws = book.active
        ws.append(["Price list"])
        ws.merge_cells("A1:C1")
        ws.append(["Name", "Size", "Price"])
        for size, price in (("S", 1.5), ("M", 2.5), ("L", 3.5)):
            ws.append([None, size, price])
        ws["A3"] = "Shirt"
        ws.merge_cells("A3:A5")

    sheet = read_bytes(_workbook_bytes(fill), filename="p.xlsx").sheets[0]
    assert [row[0] for row in sheet.rows[2:5]] == ["Shirt", "Shirt", "Shirt"]
    # A title merged across its row stays one cell: copies in every column would read as values.
    assert sheet.rows[0] == ["Price list"]


def test_a_malformed_merged_range_merges_nothing():
    def fill(book):
        book.active.append(["SKU", "Price"])
        book.active.append(["A-1", 2])

    data = _workbook_bytes(fill)
    with zipfile.ZipFile(io.BytesIO(data)) as zin:
        parts = {name: zin.read(name) for name in zin.namelist()}
    sheet_xml = parts["xl/worksheets/sheet1.xml"].decode()
    parts["xl/worksheets/sheet1.xml"] = sheet_xml.replace(
        "</sheetData>", '</sheetData><mergeCells count="1"><mergeCell ref="A1:Q"/></mergeCells>'
    ).encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zout:
        for name, body in parts.items():
            zout.writestr(name, body)
    assert read_bytes(out.getvalue(), filename="p.xlsx").sheets[0].rows == [["SKU", "Price"], ["A-1", "2"]]


@pytest.mark.parametrize(
    ("fmt", "currency"),
    [
        ('#,##0.00\\ "€"', "EUR"),
        ("#,##0.00\\ €", "EUR"),
        ("[$£-809]#,##0.00", "GBP"),
        ("* €#,##0", "EUR"),  # `* ` fills with blanks; the symbol after it is shown
        # Accounting formats pad with the width of their locale's symbol: `_€` is a blank, not a euro.
        ('_-* #,##0.00\\ _€_-;-* #,##0.00\\ _€_-;_-* "-"??\\ _€_-;_-@_-', None),
        ("#,##0.00*€", None),  # `*€` repeats the symbol to fill the cell: decoration
    ],
)
def test_a_number_format_states_a_currency_only_where_it_shows_a_symbol(fmt, currency):
    assert currency_from_number_format(fmt) == currency
