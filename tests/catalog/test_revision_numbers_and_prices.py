"""Catalog details a reader sees: revisions numbered 1, 2, 3 ... per
supplier, one supplier per name whatever its case and spacing, and every
price shown with the decimals the supplier gave, on every page, in the API
and in the exports."""

import csv
import io
import threading
from decimal import Decimal

import pytest
from django.db import connections
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from openpyxl import load_workbook

from catalog.export import item_price_places, item_price_text, price_text
from catalog.extraction import extract_items
from catalog.models import CatalogItem, CatalogRevision, Supplier
from catalog.reading import Table
from tests.catalog.test_hygiene import run_jobs, upload

CSV_HEADER = "SKU,Description,Unit,Price,Currency\n"


def sheet(*prices: str) -> bytes:
    rows = "".join(f"P-{n},Part {n},piece,{price},EUR\n" for n, price in enumerate(prices, start=1))
    return (CSV_HEADER + rows).encode()


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


# --- revision numbers --------------------------------------------------------------


def test_revisions_are_numbered_per_supplier_in_order_of_publication(workspace, member):
    for n, (supplier, price) in enumerate(
        [("North", "1.10"), ("South", "2.10"), ("North", "1.20"), ("North", "1.30"), ("South", "2.20")]
    ):
        upload(workspace, member, sheet(price), key=f"k{n}", supplier=supplier)
        run_jobs()

    numbers = {
        name: list(
            CatalogRevision.objects.filter(supplier__name=name)
            .order_by("published_at", "pk")
            .values_list("number", flat=True)
        )
        for name in ("North", "South")
    }

    assert numbers == {"North": [1, 2, 3], "South": [1, 2]}


def test_revisions_without_a_supplier_are_numbered_per_workspace(workspace, member):
    for n in range(2):
        upload(workspace, member, sheet(f"1.{n}5"), key=f"k{n}", supplier="")
        run_jobs()

    assert sorted(CatalogRevision.objects.filter(supplier=None).values_list("number", flat=True)) == [1, 2]


def test_pages_and_api_name_a_revision_by_its_number(workspace, member):
    for n, price in enumerate(["1.10", "1.20"]):
        upload(workspace, member, sheet(price), key=f"k{n}", supplier="North")
        run_jobs()
    second = CatalogRevision.objects.get(number=2)
    client = Client()
    client.force_login(member)

    page = client.get(f"/catalog/revisions/{second.public_id}/").content.decode()
    answer = client.get(f"/api/revisions/{second.public_id}").json()
    export = client.get(f"/catalog/revisions/{second.public_id}/export.csv")

    assert "<h1>Revision 2" in page and "What changed since revision 1" in page
    assert answer["number"] == 2
    assert 'filename="north-revision-2.csv"' in export["Content-Disposition"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_first_publications_of_one_name_in_two_spellings_make_one_supplier(workspace, member):
    """ "Acme" and " ACME " published at the same moment: one supplier, numbered 1 and 2."""
    for n, name in enumerate(["Acme", " ACME "]):
        upload(workspace, member, sheet(f"3.{n}0"), key=f"k{n}", supplier=name)
    barrier = threading.Barrier(2)
    errors = []

    def work() -> None:
        try:
            barrier.wait(timeout=10)
            run_jobs()
        except Exception as error:  # reported below
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    assert list(Supplier.objects.values_list("name", flat=True)) in (["Acme"], ["ACME"])
    assert sorted(CatalogRevision.objects.values_list("number", flat=True)) == [1, 2]


@pytest.mark.django_db(transaction=True)
def test_the_migration_numbers_existing_revisions_in_order_of_publication():
    before, after = (
        [("catalog", "0007_pricesheet_supplier_name")],
        [("catalog", "0008_revision_number_price_places")],
    )
    executor = MigrationExecutor(connection := connections["default"])
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    workspace = old.get_model("accounts", "Workspace").objects.create(slug="acme", name="Acme")
    Supplier_ = old.get_model("catalog", "Supplier")
    Job = old.get_model("jobs", "Job")
    Revision = old.get_model("catalog", "CatalogRevision")
    Item = old.get_model("catalog", "CatalogItem")
    north, south = (Supplier_.objects.create(workspace=workspace, name=n) for n in ("North", "South"))
    made = []
    for supplier in (north, south, north, None, north, None):
        job = Job.objects.create(
            kind="parse_sheet", workspace=workspace, max_attempts=5, state="completed", attempt=1
        )
        made.append(
            Revision.objects.create(workspace=workspace, supplier=supplier, job=job, attempt=1, item_count=1)
        )
    for price in ("12.500000", "0.125000", "7.000000", "0.000150"):
        Item.objects.create(
            revision=made[0],
            sku=price,
            description="x",
            unit_price=Decimal(price),
            currency="EUR",
            source_sheet="S",
            source_row=2,
        )

    executor = MigrationExecutor(connection)
    executor.migrate(after)
    new = executor.loader.project_state(after).apps
    try:
        numbers = dict(new.get_model("catalog", "CatalogRevision").objects.values_list("pk", "number"))
        places = dict(new.get_model("catalog", "CatalogItem").objects.values_list("sku", "price_places"))
        assert [numbers[r.pk] for r in made] == [1, 1, 2, 1, 3, 2]
        assert places == {"12.500000": 2, "0.125000": 3, "7.000000": 2, "0.000150": 5}
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


# --- one price format ---------------------------------------------------------------


@pytest.mark.parametrize(
    "written, shown",
    [
        ("12.50", "12.50"),
        ("3.8", "3.8"),
        ("12", "12"),
        ("0.125", "0.125"),
        ("1.000", "1.000"),
        ("1.234,50", "1234.50"),
    ],
)
def test_the_extractor_keeps_the_decimals_the_sheet_shows(written, shown):
    other = "2,00" if "," in written else "2.00"
    table = Table.from_json(
        {
            "sheets": [
                {
                    "name": "S",
                    "rows": [
                        ["SKU", "Description", "Unit", "Price", "Currency"],
                        ["P-1", "Part", "piece", written, "EUR"],
                        ["P-2", "Other part", "piece", other, "EUR"],
                        ["P-3", "Third part", "piece", other, "EUR"],
                    ],
                }
            ]
        }
    )
    item = extract_items(table).items[0]

    assert Decimal(item["unit_price"]) == Decimal(shown)  # the value, canonical
    assert item_price_text(item) == shown


def test_the_shown_decimals_never_round_a_value():
    # A reviewer's "1.125" on an item the sheet showed as "1.00".
    item = {"unit_price": "1.125", "source": {"sheet": "S", "row": 2, "price_places": 2}}
    assert item_price_places(item) == 3
    assert item_price_text(item) == "1.125"
    assert price_text(Decimal("12.500000"), 0) == "12.5"
    assert price_text(Decimal("12.500000")) == "12.50"


def test_every_page_api_and_export_shows_the_suppliers_decimals(workspace, member):
    upload(workspace, member, sheet("12.50", "3.8", "7", "0.125"), key="k", supplier="North")
    run_jobs()
    revision = CatalogRevision.objects.get()
    job = revision.job
    expected = {"P-1": "12.50", "P-2": "3.8", "P-3": "7", "P-4": "0.125"}
    assert dict(CatalogItem.objects.values_list("sku", "price_places")) == {
        "P-1": 2,
        "P-2": 1,
        "P-3": 0,
        "P-4": 3,
    }
    client = Client()
    client.force_login(member)

    revision_page = client.get(f"/catalog/revisions/{revision.public_id}/").content.decode()
    job_page = client.get(f"/jobs/{job.pk}/").content.decode()
    api = client.get(f"/api/revisions/{revision.public_id}/items").json()["results"]
    rows = list(
        csv.DictReader(
            io.StringIO(
                client.get(f"/api/revisions/{revision.public_id}/items?format=csv")
                .getvalue()
                .decode("utf-8-sig")
            )
        )
    )
    workbook = load_workbook(
        io.BytesIO(client.get(f"/api/revisions/{revision.public_id}/items?format=xlsx").getvalue())
    )
    cells = {row[0].value: row[5] for row in workbook.active.iter_rows(min_row=2)}

    for shown in expected.values():
        assert f'<td class="num-cell">{shown}</td>' in revision_page
        assert f'<td class="num">{shown}</td>' in job_page
    assert {i["sku"]: i["unit_price"] for i in api} == expected
    assert {r["SKU"]: r["Unit price"] for r in rows} == expected
    assert {sku: cell.number_format for sku, cell in cells.items()} == {
        "P-1": "#,##0.00",
        "P-2": "#,##0.0",
        "P-3": "#,##0",
        "P-4": "#,##0.000",
    }
