"""Helpers shared by the review, catalog page and browser tests: a flagged
job put in place through the job services, without the extractor."""

import uuid

from catalog.models import PriceSheet, Supplier
from catalog.reading import Table
from catalog.services import revision_publish
from catalog.validation import validate_items
from jobs.models import Job
from jobs.services import job_accept_output, job_admit, job_checkpoint, job_claim_next

KIND = "parse_sheet"

SHEET = {
    "sheets": [
        {
            "name": "Prices",
            "rows": [
                ["Acme Supplies price list 2026"],
                [],
                ["SKU", "Description", "Unit", "Price"],
                ["A-1", "Hex bolt M8", "pcs", "12.50"],
                ["A-2", "Washer M8", "ea", "0.40"],
                ["A-3", "Nut M8", "u", "0.90"],
            ],
        }
    ]
}


def sheet_items(currency=None) -> list[dict]:
    """The three items of SHEET as an extractor finds them: no currency in
    the sheet, and an ambiguous unit "u" on A-3."""
    rows = [
        ("A-1", "Hex bolt M8", "pcs", "12.50", 4),
        ("A-2", "Washer M8", "ea", "0.40", 5),
        ("A-3", "Nut M8", "u", "0.90", 6),
    ]
    return [
        {
            "sku": sku,
            "description": desc,
            "unit": unit,
            "pack_size": None,
            "unit_price": price,
            "currency": currency,
            "source": {"sheet": "Prices", "row": row},
        }
        for sku, desc, unit, price, row in rows
    ]


def make_supplier(workspace, name="Acme Fasteners") -> Supplier:
    return Supplier.objects.get_or_create(workspace=workspace, name=name)[0]


def make_sheet(workspace, supplier, name="acme-prices.csv") -> PriceSheet:
    # Each call stands for another upload (another file): an identical
    # file with identical items would publish no new revision.
    sha256 = uuid.uuid4().hex * 2
    return PriceSheet.objects.create(
        workspace=workspace,
        supplier=supplier,
        sha256=sha256,
        size=1,
        original_name=name,
        storage_path="sheets/" + sha256,
        supplier_name=supplier.name if supplier else "",
    )


def _claimed(workspace, supplier, table, created_by=None):
    supplier = supplier or make_supplier(workspace)
    sheet = make_sheet(workspace, supplier)
    job, _ = job_admit(
        workspace_id=workspace.pk,
        kind=KIND,
        payload={"sheet_id": str(sheet.pk), "supplier_id": supplier.pk},
        created_by_id=getattr(created_by, "pk", None),
    )
    claim = job_claim_next(worker_id="test-worker", kinds=[KIND])
    assert claim is not None and claim.job_id == job.pk
    job_checkpoint(claim=claim, name="table", data=table)
    return claim


def flagged_job(workspace, *, items=None, table=None, supplier=None) -> Job:
    """A job awaiting review: admitted, claimed, table checkpointed, and its
    validated (flagged) items accepted with needs_review."""
    table = table or SHEET
    items = sheet_items() if items is None else items
    claim = _claimed(workspace, supplier, table)
    checked = validate_items(items, Table.from_json(table))
    job_accept_output(
        claim=claim, output={"items": checked, "notes": [], "extractor": "builtin"}, needs_review=True
    )
    return Job.objects.get(pk=claim.job_id)


def published_job(workspace, *, items, supplier=None, table=None) -> Job:
    """A job whose clean items the worker published directly."""
    claim = _claimed(workspace, supplier, table or SHEET)
    job_accept_output(
        claim=claim,
        output={"items": items, "notes": [], "extractor": "builtin"},
        publish=lambda job: revision_publish(job=job),
    )
    return Job.objects.get(pk=claim.job_id)


def reviewed_revision(workspace, reviewer):
    """A flagged job approved by `reviewer` with values set by hand: the
    currency EUR on every item, and the unit "piece" on A-3 (extracted "u")."""
    from catalog.models import CatalogRevision
    from review.edits import ReviewEdits
    from review.services import review_approve

    job = flagged_job(workspace)
    review_approve(
        user=reviewer,
        job_id=job.pk,
        expected_version=job.version,
        edits=ReviewEdits(currency="EUR", currency_scope="all", rows={2: {"unit": "piece"}}),
    )
    return CatalogRevision.objects.get(job=job)
