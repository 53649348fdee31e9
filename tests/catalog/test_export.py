"""Exports escape every cell a spreadsheet would run as a formula: the files
are read back and checked cell by cell."""

import csv
import io
from decimal import Decimal

import pytest
from django.urls import reverse
from openpyxl import load_workbook

from catalog.export import FORMULA_PREFIXES, HEADERS, escape_cell, rows_to_csv, rows_to_xlsx
from catalog.models import CatalogItem, CatalogRevision
from tests.review import make_supplier, published_job, sheet_items

DANGEROUS = ["=HYPERLINK(\"http://evil.example\",\"click\")", "+1+1", "-2+3", "@SUM(A1:A2)",
             "\t=1+1", "\r=1+1"]


def hostile_rows():
    rows = []
    for n, text in enumerate(DANGEROUS):
        rows.append({"sku": text, "description": text, "unit": text, "pack_size": Decimal("10"),
                     "unit_price": Decimal("1.500000"), "currency": "EUR",
                     "source_sheet": text, "source_row": n + 4})
    rows.append({"sku": "SAFE-1", "description": "Plain bolt", "unit": None, "pack_size": None,
                 "unit_price": Decimal("0.125000"), "currency": "EUR", "source_sheet": "Prices",
                 "source_row": 10})
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
    for row, text in zip(table[1:], DANGEROUS):
        assert row[0] == row[1] == row[2] == row[6] == "'" + text


def test_csv_export_keeps_plain_values():
    table = read_csv(rows_to_csv(hostile_rows()))
    assert table[-1] == ["SAFE-1", "Plain bolt", "", "", "0.125", "EUR", "Prices", "10"]
    assert table[1][3:6] == ["10", "1.50", "EUR"]


def test_xlsx_export_escapes_every_formula_leading_cell():
    rows = read_xlsx(rows_to_xlsx(hostile_rows()))
    assert [c.value for c in rows[0]] == list(HEADERS)
    cells = [c for row in rows[1:] for c in row]
    assert not [c for c in cells if c.data_type == "f"]
    assert not [c for c in cells if isinstance(c.value, str) and c.value.startswith(FORMULA_PREFIXES)]
    for row, text in zip(rows[1:], DANGEROUS):
        # XML parsers read a carriage return back as a line feed.
        expected = ("'" + text).replace("\r", "\n")
        assert [c.value for c in (row[0], row[1], row[2], row[6])] == [expected] * 4
        assert all(c.data_type == "s" for c in (row[0], row[1], row[2], row[6]))


def test_xlsx_export_writes_numbers_as_numbers():
    rows = read_xlsx(rows_to_xlsx(hostile_rows()))
    price, pack, source_row = rows[1][4], rows[1][3], rows[1][7]
    assert (price.data_type, pack.data_type, source_row.data_type) == ("n", "n", "n")
    assert (Decimal(str(price.value)), pack.value, source_row.value) == (Decimal("1.5"), 10, 4)


@pytest.fixture
def hostile_revision(workspace):
    """A published revision whose supplier text starts with formula characters."""
    items = []
    for text, base in zip(DANGEROUS, sheet_items("EUR")):
        items.append({**base, "unit": "pcs"})
    job = published_job(workspace, items=items, supplier=make_supplier(workspace))
    revision = CatalogRevision.objects.get(job=job)
    for item, text in zip(revision.items.order_by("pk"), DANGEROUS):
        CatalogItem.objects.filter(pk=item.pk).update(description=text, sku=text)
    return revision


def test_downloaded_csv_escapes_every_formula_leading_cell(client, member, hostile_revision):
    client.force_login(member)
    response = client.get(reverse("catalog:export_csv", args=[hostile_revision.public_id]))
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    table = read_csv(response.content)
    assert len(table) == 1 + hostile_revision.item_count
    assert not [c for row in table for c in row if c.startswith(FORMULA_PREFIXES)]
    assert sum(c.startswith("'") for row in table for c in row) == 2 * hostile_revision.item_count


def test_downloaded_xlsx_escapes_every_formula_leading_cell(client, member, hostile_revision):
    client.force_login(member)
    response = client.get(reverse("catalog:export_xlsx", args=[hostile_revision.public_id]))
    assert response["Content-Disposition"].endswith('.xlsx"')
    rows = read_xlsx(response.content)
    assert len(rows) == 1 + hostile_revision.item_count
    cells = [c for row in rows for c in row]
    assert not [c for c in cells if c.data_type == "f"]
    assert not [c for c in cells if isinstance(c.value, str) and c.value.startswith(FORMULA_PREFIXES)]
    assert sum(isinstance(c.value, str) and c.value.startswith("'") for c in cells) == (
        2 * hostile_revision.item_count)
