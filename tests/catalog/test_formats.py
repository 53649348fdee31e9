"""XLS, XLSB, ODS and text PDFs read into the same table as CSV and XLSX;
formats are told by their bytes; the model-backed extractor gets PDF pages as sheets."""

import io
import zipfile

import pytest

from catalog.errors import UnreadableSheet
from catalog.extraction import extract_items
from catalog.llm import LLMConfig, extract_items_with_model
from catalog.readers import FORMATS, accepted_files, detect
from catalog.readers.common import ReadLimits
from catalog.reading import read_bytes
from tests.catalog.formatgen import (
    ods_bytes,
    ods_cell,
    ods_row,
    pdf_bytes,
    price_list_pdf,
    xls_bytes,
    xlsb_bytes,
    xlsb_cell_rk,
    xlsb_record,
)
from tests.catalog.hostile import ITEM_ROWS, worksheet, xlsx_bytes
from tests.fake_llm import FakeProvider

PRICES = [
    ["SKU", "Description", "Unit", "Price", "Currency"],
    ["A-1", "Apples", "kg", 8.5232744625, "EUR"],
    ["B-2", "Pears", "kg", 2.25, "EUR"],
]


def xls_prices() -> bytes:
    return xls_bytes({"Prices": PRICES}, formats={("Prices", 1, 3): "0.00", ("Prices", 2, 3): "0.00"})


# --- telling formats by their bytes -------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "build", "expected"),
    [
        ("prices.xls", lambda: xlsx_bytes({"S": worksheet(ITEM_ROWS)}), "xlsx"),
        ("prices.xlsx", xls_prices, "xls"),
        ("prices.csv", lambda: ods_bytes({"T": ods_row(["x"])}), "ods"),
        ("prices.xlsx", lambda: xlsb_bytes(xlsb_cell_rk(0, 0)), "xlsb"),
        ("prices.txt", lambda: pdf_bytes([[(40, 40, "x")]]), "pdf"),
        ("prices.xls", lambda: b"\x09\x00\x04\x00\x02\x00\x10\x00" + b"\x00" * 40, "xls"),
    ],
)
def test_the_format_is_told_by_the_bytes_not_the_name(name, build, expected):
    assert detect(build(), filename=name) == expected


def test_an_xlsx_named_xls_reads_as_xlsx():
    table = read_bytes(xlsx_bytes({"S": worksheet(ITEM_ROWS)}), filename="prices.xls")
    assert table.sheets[0].rows[1] == ["A-1", "Apples", "kg", "1.50", "EUR"]


def test_an_opendocument_text_is_refused_as_not_a_spreadsheet():
    data = ods_bytes({"T": ""}, mimetype="application/vnd.oasis.opendocument.text")
    with pytest.raises(UnreadableSheet, match="OpenDocument text, not a spreadsheet"):
        read_bytes(data, filename="letter.odt")


def test_text_named_ods_is_refused_rather_than_read_as_csv():
    with pytest.raises(UnreadableSheet, match="name says ODS but the bytes are not one"):
        read_bytes(b"SKU,Price\nA,1\n", filename="a.ods")


def test_the_upload_form_accepts_every_registered_extension():
    accept = accepted_files().split(",")
    assert all(ext in accept for f in FORMATS.values() for ext in f.extensions)
    assert {".xls", ".xlsb", ".ods", ".pdf"} <= set(accept)


# --- XLS ------------------------------------------------------------------------------------


def test_xls_number_shows_as_its_format_displays_it_with_the_stored_value_kept():
    sheet = read_bytes(xls_prices(), filename="p.xls").sheets[0]
    assert sheet.name == "Prices"
    assert sheet.rows[1] == ["A-1", "Apples", "kg", "8.52", "EUR"]
    assert sheet.raw_value(2, 3) == {"value": "8.5232744625", "formula": False}
    assert sheet.rows[2][3] == "2.25" and sheet.raw_value(3, 3) is None


def test_xls_currency_of_a_number_format_is_kept():
    data = xls_bytes({"S": [["SKU", "Price"], ["A-1", 3.5]]}, formats={("S", 1, 1): '"£"#,##0.00'})
    assert read_bytes(data, filename="p.xls").sheets[0].format_currency(2, 1) == "GBP"


def test_xls_merged_range_repeats_its_value_and_rows_keep_spreadsheet_numbers():
    rows = [[None], [None], ["SKU", "Group", "Price"], ["A-1", "Fruit", 1.5], ["B-2", None, 2.5]]
    data = xls_bytes({"S": rows}, merges={"S": [(3, 4, 1, 1)]})
    sheet = read_bytes(data, filename="p.xls").sheets[0]
    assert sheet.rows[:2] == [[], []]  # the used range starts at row 3; rows keep their numbers
    assert sheet.rows[3] == ["A-1", "Fruit", "1.5"] and sheet.rows[4] == ["B-2", "Fruit", "2.5"]


def test_xls_dates_read_as_the_xlsx_reader_renders_them():
    import datetime as dt

    data = xls_bytes({"S": [["Valid from", dt.datetime(2026, 3, 1)]]}, formats={("S", 0, 1): "dd.mm.yyyy"})
    assert read_bytes(data, filename="p.xls").sheets[0].rows[0] == ["Valid from", "2026-03-01"]


def test_xls_price_list_extracts_items():
    items = extract_items(read_bytes(xls_prices(), filename="p.xls")).items
    assert [(i["sku"], i["unit_price"], i["currency"]) for i in items] == [
        ("A-1", "8.52", "EUR"),
        ("B-2", "2.25", "EUR"),
    ]


def test_xls_with_more_sheets_than_the_limit_is_refused():
    data = xls_bytes({f"S{i}": [["x"]] for i in range(4)})
    with pytest.raises(UnreadableSheet, match="4 sheets \\(limit 3\\)"):
        read_bytes(data, filename="p.xls", limits=ReadLimits(max_sheets=3))


def test_truncated_xls_is_refused_with_a_plain_reason():
    data = xls_prices()
    with pytest.raises(UnreadableSheet, match="^the XLS workbook cannot be read"):
        read_bytes(data[: len(data) // 2], filename="p.xls")


# --- ODS ------------------------------------------------------------------------------------


def ods_prices() -> bytes:
    rows = (
        ods_row(["SKU", "Description", "Unit", "Price"])
        + ods_row(
            [
                ods_cell("A-1"),
                ods_cell("Apples"),
                ods_cell("kg"),
                ods_cell(8.5232744625, shown="8,52 €", currency="EUR"),
            ]
        )
        + ods_row(
            [
                ods_cell("B-2"),
                ods_cell("Pears"),
                ods_cell("kg"),
                ods_cell(4.5, shown="4,50 €", currency="EUR", formula="of:=[.D2]*0+4.5"),
            ]
        )
        + ods_row(
            [
                ods_cell("C-3"),
                ods_cell("Plums", span=(2, 1)),
                ods_cell("kg"),
                ods_cell(3, shown="3,00 €", currency="EUR"),
            ]
        )
        + ods_row(
            [
                ods_cell("D-4"),
                "<table:covered-table-cell/>",
                ods_cell("kg"),
                ods_cell(1.25, shown="1,25 €", currency="EUR"),
            ]
        )
    )
    return ods_bytes({"Prices": rows, "Notes": ods_row(["valid", ods_cell(date="2026-03-01")])})


def test_ods_reads_what_each_cell_shows_with_the_stored_value_kept():
    table = read_bytes(ods_prices(), filename="p.ods")
    sheet = table.sheets[0]
    assert [s.name for s in table.sheets] == ["Prices", "Notes"]
    assert sheet.rows[1] == ["A-1", "Apples", "kg", "8.52"]
    assert sheet.raw_value(2, 3) == {"value": "8.5232744625", "formula": False}
    assert sheet.rows[2][3] == "4.50" and sheet.raw_value(3, 3) == {"value": "4.5", "formula": True}
    assert sheet.format_currency(2, 3) == "EUR"
    assert table.sheets[1].rows[0] == ["valid", "2026-03-01"]


def test_ods_spanned_cell_fills_its_range():
    sheet = read_bytes(ods_prices(), filename="p.ods").sheets[0]
    assert sheet.rows[3][1] == sheet.rows[4][1] == "Plums"


def test_ods_repeated_empty_rows_and_columns_are_counted_not_held():
    rows = (
        ods_row([ods_cell("x"), ods_cell(repeat=16_000)])
        + ods_row("", repeat=100_000)
        + ods_row([ods_cell(repeat=3), ods_cell("far")])
    )
    sheet = read_bytes(ods_bytes({"T": rows}), filename="p.ods").sheets[0]
    assert len(sheet.rows) == 100_002 and sheet.rows[-1] == ["", "", "", "far"]
    assert sheet.rows[0] == ["x"]


def test_ods_row_repeated_beyond_the_row_limit_is_refused_before_it_is_held():
    rows = ods_row([ods_cell("x")], repeat=1_000_000)
    with pytest.raises(UnreadableSheet, match="more than 150000 rows"):
        read_bytes(ods_bytes({"T": rows}), filename="p.ods")


def test_ods_price_list_extracts_items_in_the_cells_currency():
    items = extract_items(read_bytes(ods_prices(), filename="p.ods")).items
    assert [(i["sku"], i["unit_price"], i["currency"]) for i in items][:2] == [
        ("A-1", "8.52", "EUR"),
        ("B-2", "4.5", "EUR"),
    ]


# --- XLSB -----------------------------------------------------------------------------------


def test_xlsb_cell_beyond_the_column_limit_is_refused_before_calamine_reads_it():
    data = xlsb_bytes(xlsb_cell_rk(0, 0) + xlsb_cell_rk(1, 16_383))
    with pytest.raises(UnreadableSheet, match="column 16384 \\(limit 1000 columns\\)"):
        read_bytes(data, filename="p.xlsb")


def test_xlsb_range_larger_than_the_dense_limit_is_refused():
    data = xlsb_bytes(xlsb_cell_rk(0, 0) + xlsb_cell_rk(99_999, 999))
    with pytest.raises(UnreadableSheet, match="spans 100000 rows by 1000 columns"):
        read_bytes(data, filename="p.xlsb")


def test_xlsb_with_garbage_records_is_refused_with_a_plain_reason():
    data = xlsb_bytes(xlsb_cell_rk(0, 0), workbook=xlsb_record(156, b"\xff" * 3) + b"\x80")
    with pytest.raises(UnreadableSheet, match="^the XLSB workbook cannot be read"):
        read_bytes(data, filename="p.xlsb")


# --- PDF ------------------------------------------------------------------------------------


def test_pdf_pages_become_sheets_whose_rows_are_the_lines():
    table = read_bytes(price_list_pdf(pages=2, rows_per_page=3), filename="list.pdf")
    assert [s.name for s in table.sheets] == ["page 1", "page 2"]
    page = table.sheets[1]
    assert page.rows[1] == ["SKU", "Description", "Unit", "Price"]
    assert page.rows[2][:3] == ["GT-004", "Garden rake model 4", "pcs"]


def test_pdf_price_list_items_cite_their_page_and_line():
    items = extract_items(read_bytes(price_list_pdf(pages=2, rows_per_page=3), filename="l.pdf")).items
    cited = {i["sku"]: (i["source"]["sheet"], i["source"]["row"], i["currency"]) for i in items}
    assert cited["GT-001"] == ("page 1", 3, "EUR")
    assert cited["GT-006"] == ("page 2", 5, "EUR")
    assert len(items) == 6


def test_scanned_pdf_is_refused_as_a_scan_with_no_text():
    with pytest.raises(UnreadableSheet, match="no text layer.*scanned.*spreadsheet.*model-backed extractor"):
        read_bytes(pdf_bytes([[], []], images_only=True), filename="scan.pdf")


def test_pdf_with_more_pages_than_max_pages_is_refused_before_reading_them():
    data = pdf_bytes([[(40, 40, f"p{i}")] for i in range(6)])
    with pytest.raises(UnreadableSheet, match="6 pages \\(limit 5\\)"):
        read_bytes(data, filename="l.pdf", limits=ReadLimits(max_pages=5))


def test_pdf_stream_inflating_beyond_the_limit_is_refused_before_it_is_inflated():
    from tests.catalog.hostile import huge_stream_pdf

    with pytest.raises(UnreadableSheet, match="stream that inflates to more than 64 MB"):
        read_bytes(huge_stream_pdf(), filename="bomb.pdf")


def test_pdf_with_neither_text_nor_images_says_it_holds_no_text():
    with pytest.raises(UnreadableSheet, match="holds no text on any page"):
        read_bytes(pdf_bytes([[]]), filename="empty.pdf")


def test_model_backed_extractor_receives_pdf_pages_as_sheets_with_line_numbers():
    provider = FakeProvider(default=lambda body: {"items": []})
    try:
        table = read_bytes(price_list_pdf(pages=2, rows_per_page=2), filename="l.pdf")
        extract_items_with_model(
            table, config=LLMConfig(base_url=provider.url, api_key="t", model="fake", timeout_seconds=5)
        )
        prompts = [r["messages"][1]["content"] for r in provider.requests]
    finally:
        provider.close()
    assert any("Sheet: page 2" in p and "row 3: GT-003 | Garden rake model 3 | pcs" in p for p in prompts)


def test_zip_checks_apply_to_every_zipped_format():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.spreadsheet")
        zf.writestr("content.xml", b"<x>" + b" " * (4 * 1024 * 1024) + b"</x>")
    with pytest.raises(UnreadableSheet, match="^ODS rejected: member 'content.xml' expands"):
        read_bytes(buf.getvalue(), filename="p.ods")


# --- through the job: upload, the limited child, the catalog ---------------------------------


@pytest.mark.parametrize(
    ("name", "build"),
    [
        ("list.pdf", lambda: price_list_pdf(pages=2, rows_per_page=3)),
        ("prices.xls", xls_prices),
        ("prices.ods", ods_prices),
    ],
)
def test_new_format_goes_from_upload_to_published_items_citing_their_source(
    workspace, settings, tmp_path, name, build
):
    from catalog.models import CatalogRevision
    from jobs.models import State
    from tests.catalog.test_parse_sheet import admit_sheet, run_until_idle

    settings.MEDIA_ROOT = tmp_path / "media"
    job = admit_sheet(workspace, name, build())
    run_until_idle()
    job.refresh_from_db()
    assert job.state == State.COMPLETED, job.reason
    items = {
        i.sku: (i.source_sheet, i.source_row, i.currency)
        for i in CatalogRevision.objects.get(job=job).items.all()
    }
    expected = {
        "list.pdf": ("GT-006", ("page 2", 5, "EUR")),
        "prices.xls": ("A-1", ("Prices", 2, "EUR")),
        "prices.ods": ("A-1", ("Prices", 2, "EUR")),
    }[name]
    assert items[expected[0]] == expected[1]


def test_scanned_pdf_upload_needs_attention_with_the_scan_reason(workspace, settings, tmp_path):
    from jobs.models import State
    from tests.catalog.test_parse_sheet import admit_sheet, run_until_idle

    settings.MEDIA_ROOT = tmp_path / "media"
    job = admit_sheet(workspace, "scan.pdf", pdf_bytes([[]], images_only=True))
    run_until_idle()
    job.refresh_from_db()
    assert (job.state, job.attempt) == (State.NEEDS_ATTENTION, 1)
    assert "no text layer" in job.reason and "model-backed extractor" in job.reason


def test_upload_page_names_the_formats_read_and_offers_their_extensions(client, member):
    from django.urls import reverse

    client.force_login(member)
    page = client.get(reverse("jobs:new")).content.decode()
    assert "Read: CSV/TSV, XLSX, XLS, XLSB, ODS, PDF (with a text layer)" in page
    assert 'accept="' + accepted_files() + '"' in page


def test_xls_title_merged_across_its_row_stays_one_cell():
    rows = [["Prices", None, None], ["SKU", "Group", "Price"], ["A-1", "Fruit", 1.5]]
    data = xls_bytes({"S": rows}, merges={"S": [(0, 0, 0, 2)]})
    assert read_bytes(data, filename="p.xls").sheets[0].rows[0] == ["Prices"]
