"""Exports: no cell a spreadsheet would run as a formula (CSV by a quote,
XLSX by the explicit string type), and an XLSX a spreadsheet user expects.
The files are read back and checked cell by cell."""

import csv
import io
from decimal import Decimal

import pytest
from django.urls import reverse
from openpyxl import load_workbook

from catalog.export import FORMULA_PREFIXES, HEADERS, escape_cell, rows_to_csv, rows_to_xlsx
from catalog.models import CatalogItem, CatalogRevision
from tests.review import make_supplier, published_job, sheet_items

DANGEROUS = ['=HYPERLINK("http://evil.example","click")', "+1+1", "-2+3", "@SUM(A1:A2)", "\t=1+1", "\r=1+1"]


def hostile_rows():
    rows = []
    for n, text in enumerate(DANGEROUS):
        rows.append(
            {
                "sku": text,
                "description": text,
                "unit": text,
                "unit_code": "",
                "pack_size": Decimal("10"),
                "unit_price": Decimal("1.500000"),
                "currency": "EUR",
                "source_sheet": text,
                "source_row": n + 4,
            }
        )
    rows.append(
        {
            "sku": "SAFE-1",
            "description": "Plain bolt",
            "unit": None,
            "unit_code": "",
            "pack_size": None,
            "unit_price": Decimal("0.125000"),
            "currency": "EUR",
            "source_sheet": "Prices",
            "source_row": 10,
        }
    )
    return rows


def read_csv(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")))


def read_xlsx(data: bytes):
    sheet = load_workbook(io.BytesIO(data)).active
    return [list(row) for row in sheet.iter_rows()]


@pytest.mark.parametrize("text", DANGEROUS)
def test_formula_leading_text_is_prefixed_with_a_quote(text):
    assert escape_cell(text) == "'" + text


@pytest.mark.parametrize("text", ["A-1", "Bolt = good", "12.50", "", "'quoted"])
def test_other_text_is_left_alone(text):
    assert escape_cell(text) == text


def test_csv_export_escapes_every_formula_leading_cell():
    table = read_csv(rows_to_csv(hostile_rows()))
    assert table[0] == list(HEADERS)
    cells = [cell for row in table[1:] for cell in row]
    assert not [c for c in cells if c.startswith(FORMULA_PREFIXES)]
    for row, text in zip(table[1:], DANGEROUS, strict=False):
        assert row[0] == row[1] == row[2] == row[7] == "'" + text


def test_csv_export_keeps_plain_values():
    table = read_csv(rows_to_csv(hostile_rows()))
    assert table[-1] == ["SAFE-1", "Plain bolt", "", "", "", "0.125", "EUR", "Prices", "10", ""]
    assert table[1][4:7] == ["10", "1.50", "EUR"]


def test_xlsx_export_stores_formula_leading_text_as_strings_without_a_quote():
    rows = read_xlsx(rows_to_xlsx(hostile_rows()))
    assert [c.value for c in rows[0]] == list(HEADERS)
    cells = [c for row in rows[1:] for c in row]
    assert not [c for c in cells if c.data_type == "f"]
    for row, text in zip(rows[1:], DANGEROUS, strict=False):
        # XML parsers read a carriage return back as a line feed.
        expected = text.replace("\r", "\n")
        assert [c.value for c in (row[0], row[1], row[2], row[7])] == [expected] * 4
        assert all(c.data_type == "s" for c in (row[0], row[1], row[2], row[7]))


def test_xlsx_text_cells_are_saved_with_the_string_type_and_no_formula():
    # The sheet's XML itself: what a spreadsheet reads, not what openpyxl infers.
    import zipfile
    from xml.etree import ElementTree

    data = rows_to_xlsx(hostile_rows())
    root = ElementTree.fromstring(zipfile.ZipFile(io.BytesIO(data)).read("xl/worksheets/sheet1.xml"))
    ns = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}
    assert root.findall(".//m:f", ns) == []
    types = {c.get("r"): c.get("t") for c in root.iterfind(".//m:c", ns)}
    for n in range(2, 2 + len(DANGEROUS)):
        assert types[f"A{n}"] in ("s", "inlineStr", "str") and types[f"B{n}"] == types[f"A{n}"]


def test_xlsx_export_writes_numbers_as_numbers():
    rows = read_xlsx(rows_to_xlsx(hostile_rows()))
    price, pack, source_row = rows[1][5], rows[1][4], rows[1][8]
    assert (price.data_type, pack.data_type, source_row.data_type) == ("n", "n", "n")
    assert (Decimal(str(price.value)), pack.value, source_row.value) == (Decimal("1.5"), 10, 4)


def test_xlsx_prices_carry_the_decimals_the_supplier_gave_as_their_number_format():
    rows = [
        {"sku": "A", "unit_price": Decimal("2.000000"), "price_places": 2, "currency": "EUR"},
        {"sku": "B", "unit_price": Decimal("4.100000"), "price_places": 1, "currency": "EUR"},
        {"sku": "C", "unit_price": Decimal("0.125000"), "price_places": 2, "currency": "EUR"},
        {"sku": "D", "unit_price": Decimal("7.000000"), "currency": "EUR"},
    ]
    cells = [(r[5].value, r[5].number_format) for r in read_xlsx(rows_to_xlsx(rows))[1:]]
    # C needs three decimals whatever was asked; D, without places, gets at least two.
    assert cells == [(2, "#,##0.00"), (4.1, "#,##0.0"), (0.125, "#,##0.000"), (7, "#,##0.00")]


def test_xlsx_has_a_currency_column_sized_columns_and_a_frozen_header():
    sheet = load_workbook(io.BytesIO(rows_to_xlsx(hostile_rows()))).active
    assert sheet.freeze_panes == "A2"
    assert sheet["G1"].value == "Currency" and sheet["G2"].value == "EUR"
    widths = {letter: sheet.column_dimensions[letter].width for letter in "ABFG"}
    assert widths["A"] > widths["G"] >= 8  # the long SKUs get a wider column than the currency
    assert all(width <= 60 for width in widths.values())


@pytest.fixture
def hostile_revision(workspace):
    """A published revision whose supplier text starts with formula characters."""
    items = []
    for _text, base in zip(DANGEROUS, sheet_items("EUR"), strict=False):
        items.append({**base, "unit": "pcs"})
    job = published_job(workspace, items=items, supplier=make_supplier(workspace))
    revision = CatalogRevision.objects.get(job=job)
    for item, text in zip(revision.items.order_by("pk"), DANGEROUS, strict=False):
        CatalogItem.objects.filter(pk=item.pk).update(description=text, sku=text)
    return revision


def test_downloaded_csv_escapes_every_formula_leading_cell(client, member, hostile_revision):
    client.force_login(member)
    response = client.get(reverse("catalog:export_csv", args=[hostile_revision.public_id]))
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    table = read_csv(response.getvalue())
    assert len(table) == 1 + hostile_revision.item_count
    assert not [c for row in table for c in row if c.startswith(FORMULA_PREFIXES)]
    assert sum(c.startswith("'") for row in table for c in row) == 2 * hostile_revision.item_count


def test_downloaded_xlsx_keeps_formula_leading_text_as_strings(client, member, hostile_revision):
    client.force_login(member)
    response = client.get(reverse("catalog:export_xlsx", args=[hostile_revision.public_id]))
    assert response["Content-Disposition"].endswith('.xlsx"')
    rows = read_xlsx(response.getvalue())
    assert len(rows) == 1 + hostile_revision.item_count
    cells = [c for row in rows for c in row]
    assert not [c for c in cells if c.data_type == "f"]
    assert not [c for c in cells if isinstance(c.value, str) and c.value.startswith("'")]
    texts = {c.value for row in rows[1:] for c in row[:2]}
    assert texts >= {text.replace("\r", "\n") for text in DANGEROUS[: hostile_revision.item_count]}


def test_a_control_character_in_a_published_cell_does_not_break_the_xlsx_export():
    row = {
        "sku": "C-1",
        "description": "Bolt\x1b[31m red\x07",
        "unit": "p\x00c",
        "unit_code": "",
        "pack_size": None,
        "unit_price": Decimal("1.50"),
        "currency": "EUR",
        "source_sheet": "Prices\x0b",
        "source_row": 2,
    }
    [_, cells] = read_xlsx(rows_to_xlsx([row]))
    assert [cells[0].value, cells[1].value, cells[2].value, cells[7].value] == [
        "C-1",
        "Bolt\ufffd[31m red\ufffd",
        "p\ufffdc",
        "Prices\ufffd",
    ]


def test_exports_name_who_set_each_value_a_reviewer_set(client, workspace, reviewer):
    from tests.review import reviewed_revision

    revision = reviewed_revision(workspace, reviewer)
    client.force_login(reviewer)
    rows = read_csv(client.get(reverse("catalog:export_csv", args=[revision.public_id])).getvalue())
    assert rows[0][-1] == "Set by a reviewer"
    by_sku = {row[0]: row[-1] for row in rows[1:]}
    assert by_sku["A-1"].startswith("currency by rey at ")
    assert by_sku["A-3"].startswith("unit by rey at ") and "; currency by rey at " in by_sku["A-3"]
    sheet = load_workbook(
        io.BytesIO(client.get(reverse("catalog:export_xlsx", args=[revision.public_id])).getvalue())
    ).active
    assert sheet.cell(row=1, column=len(HEADERS)).value == "Set by a reviewer"


def test_page_and_api_exports_of_a_revision_are_byte_identical(client, workspace, reviewer):
    from accounts.services import apitoken_create
    from tests.review import reviewed_revision

    revision = reviewed_revision(workspace, reviewer)
    client.force_login(reviewer)
    token = apitoken_create(user=reviewer)[1]
    for name, fmt in (("catalog:export_xlsx", "xlsx"), ("catalog:export_csv", "csv")):
        page = [client.get(reverse(name, args=[revision.public_id])).getvalue() for _ in range(2)]
        api = client.get(
            f"/api/revisions/{revision.public_id}/items?format={fmt}", HTTP_AUTHORIZATION=f"Bearer {token}"
        ).getvalue()
        assert page[0] == page[1] == api, fmt


def test_csv_is_produced_in_pieces_as_the_rows_are_read():
    from catalog.export import CSV_CHUNK_ROWS, csv_chunks

    read = []

    def rows():
        for n in range(3 * CSV_CHUNK_ROWS):
            read.append(n)
            yield {**hostile_rows()[-1], "source_row": n}

    pieces = csv_chunks(rows())
    first = next(pieces)
    # The first piece is out before the rows past it were read.
    assert len(read) == CSV_CHUNK_ROWS and first.startswith(b"\xef\xbb\xbfSKU,")
    rest = b"".join(pieces)
    assert b"\xef\xbb\xbf" not in rest
    assert len(read_csv(first + rest)) == 1 + 3 * CSV_CHUNK_ROWS


def test_exports_are_streamed_from_the_server_not_built_in_memory(client, workspace, reviewer):
    from accounts.services import apitoken_create
    from tests.review import reviewed_revision

    revision = reviewed_revision(workspace, reviewer)
    client.force_login(reviewer)
    token = apitoken_create(user=reviewer)[1]
    for name, fmt in (("catalog:export_csv", "csv"), ("catalog:export_xlsx", "xlsx")):
        page = client.get(reverse(name, args=[revision.public_id]))
        api = client.get(
            f"/api/revisions/{revision.public_id}/items?format={fmt}", HTTP_AUTHORIZATION=f"Bearer {token}"
        )
        assert page.streaming and api.streaming, fmt
        assert b"".join(page.streaming_content) == b"".join(api.streaming_content), fmt


def test_xlsx_is_written_in_write_only_mode_with_inline_strings():
    import zipfile

    data = rows_to_xlsx(hostile_rows())
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    # No shared-strings table: a table of every text would grow with the revision.
    assert "xl/sharedStrings.xml" not in names
    assert b't="inlineStr"' in zipfile.ZipFile(io.BytesIO(data)).read("xl/worksheets/sheet1.xml")
