"""The price domain: suppliers, uploaded sheets and published catalog revisions."""

import uuid

from django.conf import settings
from django.db import models

from accounts.models import Workspace


class Supplier(models.Model):
    # The id in URLs and API answers: random, so it tells nobody how many
    # suppliers other workspaces have (the integer key stays internal).
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="suppliers")
    name = models.CharField(max_length=200)
    current_revision = models.ForeignKey(
        "CatalogRevision", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "name"], name="supplier_unique_name"),
        ]

    def __str__(self) -> str:
        return self.name


class PriceSheet(models.Model):
    """An uploaded sheet, exactly as received. Never modified: a retry reads
    the same bytes (the file is stored under its sha256)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.PROTECT, related_name="sheets")
    # The supplier as the uploader named it. The Supplier row is created when
    # a revision is first published for it, so an upload that is refused or
    # never published leaves no supplier behind; `supplier` is set only when
    # the supplier already existed at upload.
    supplier_name = models.CharField(max_length=200, blank=True)
    supplier = models.ForeignKey(
        Supplier, null=True, blank=True, on_delete=models.PROTECT, related_name="sheets"
    )
    sha256 = models.CharField(max_length=64)
    size = models.BigIntegerField()
    original_name = models.CharField(max_length=255)
    content_type = models.CharField(max_length=100, blank=True)
    storage_path = models.CharField(max_length=255)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.original_name} ({self.sha256[:12]})"


class CatalogRevision(models.Model):
    """One publication: the items of one job. `job` is unique, so a repeated
    delivery or a second worker can never publish the same job twice."""

    workspace = models.ForeignKey(Workspace, on_delete=models.PROTECT, related_name="revisions")
    supplier = models.ForeignKey(
        Supplier, null=True, blank=True, on_delete=models.PROTECT, related_name="revisions"
    )
    # The id in URLs and API answers (see Supplier.public_id).
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    job = models.OneToOneField("jobs.Job", on_delete=models.PROTECT, related_name="revision")
    attempt = models.PositiveIntegerField(
        help_text="The attempt that held the fence when this was published."
    )
    published_at = models.DateTimeField(auto_now_add=True)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    item_count = models.PositiveIntegerField()
    # 1, 2, 3 ... per supplier (per workspace for revisions without one), in
    # order of publication: what pages call "revision 3" of a supplier.
    number = models.PositiveIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["supplier", "number"],
                name="revision_unique_number",
                condition=models.Q(supplier__isnull=False),
            ),
            models.UniqueConstraint(
                fields=["workspace", "number"],
                name="revision_unique_number_without_supplier",
                condition=models.Q(supplier__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return f"revision {self.number} of {self.supplier or self.workspace}"


class CatalogItem(models.Model):
    revision = models.ForeignKey(CatalogRevision, on_delete=models.CASCADE, related_name="items")
    sku = models.CharField(max_length=200)
    description = models.TextField()
    # As written in the sheet; null when the sheet gives none (published rows keep that apart from "").
    unit = models.CharField(max_length=50, null=True, blank=True)  # noqa: DJ001
    # Its UN/CEFACT Recommendation 20 code (catalog.units); empty when unknown.
    unit_code = models.CharField(max_length=3, blank=True, default="")
    pack_size = models.DecimalField(max_digits=12, decimal_places=3, null=True, blank=True)
    unit_price = models.DecimalField(max_digits=18, decimal_places=6)
    # The decimals the price is shown with: as many as the supplier wrote
    # ("3.80" -> 2), never fewer than the value needs.
    price_places = models.PositiveSmallIntegerField(default=2)
    currency = models.CharField(max_length=3)
    source_sheet = models.CharField(max_length=200)
    source_row = models.PositiveIntegerField()
    # The cited cell's column letter for an item of a price matrix (one item
    # per cell); empty for an item read from a row.
    source_column = models.CharField(max_length=3, blank=True, default="")
    # The fields a reviewer set, each {"by": username, "at": ISO time,
    # "extracted": the value the extractor gave}; a field not named here
    # holds the extracted value.
    provenance = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [models.Index(fields=["revision", "sku"])]

    def __str__(self) -> str:
        return f"{self.sku} {self.unit_price} {self.currency}"


class SupplierLayout(models.Model):
    """A column mapping a reviewer set (or confirmed) and approved for a
    supplier, remembered with the signature of the sheets it reads (their
    names, column counts and header cells). The supplier's next sheet with
    the same signature is read with it instead of inferring its columns."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    supplier = models.ForeignKey(Supplier, on_delete=models.CASCADE, related_name="layouts")
    signature = models.CharField(max_length=64, help_text="sha256 of the sheets' header signatures.")
    sheet_names = models.CharField(max_length=500, help_text="The sheets this layout reads.")
    mapping = models.JSONField(help_text="The column mapping: sheets, header rows, columns, currency.")
    # Kept per sheet, so the signature can be compared sheet by sheet.
    sheet_signatures = models.JSONField(default=dict)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approved_by_name = models.CharField(max_length=150)
    approved_at = models.DateTimeField(auto_now=True)
    job = models.ForeignKey(
        "jobs.Job",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The job whose approval stored it.",
    )

    class Meta:
        ordering = ["-approved_at"]
        constraints = [
            models.UniqueConstraint(fields=["supplier", "signature"], name="supplierlayout_unique"),
        ]

    def __str__(self) -> str:
        return f"layout of {self.supplier} ({self.sheet_names})"
