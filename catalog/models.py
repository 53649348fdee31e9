"""The price domain: workspaces and their members, suppliers, uploaded sheets
and published catalog revisions."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q


class Workspace(models.Model):
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.slug


class MembershipQuerySet(models.QuerySet):
    def reviewers(self):
        return self.filter(role__in=[Membership.Role.REVIEWER, Membership.Role.ADMIN])


class Membership(models.Model):
    class Role(models.TextChoices):
        MEMBER = "member"  # uploads and watches jobs
        REVIEWER = "reviewer"  # also approves or rejects flagged extractions
        ADMIN = "admin"  # everything a reviewer can, for the workspace

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)

    objects = MembershipQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "user"], name="membership_unique"),
            models.CheckConstraint(
                condition=Q(role__in=["member", "reviewer", "admin"]), name="membership_role_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.workspace} ({self.role})"


class ApiToken(models.Model):
    """A bearer token for API clients. Only its SHA-256 is stored; the token
    itself is shown once, when it is created. A `read` token may only read:
    authentication refuses it on every unsafe method."""

    class Scope(models.TextChoices):
        FULL = "full"  # everything its user may do
        READ = "read"  # GET and HEAD only, for integrations that must never change anything

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=12, help_text="The first characters, to tell tokens apart.")
    token_hash = models.CharField(max_length=64, unique=True)
    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.FULL)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(scope__in=["full", "read"]), name="apitoken_scope_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user}, {self.scope})"


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
    attempt = models.PositiveIntegerField(help_text="The attempt that held the fence when this was published.")
    published_at = models.DateTimeField(auto_now_add=True)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    item_count = models.PositiveIntegerField()

    @property
    def short_id(self) -> str:
        """The first characters of the public id, to tell revisions apart on a page."""
        return self.public_id.hex[:8]

    def __str__(self) -> str:
        return f"revision {self.short_id} of {self.supplier or self.workspace}"


class CatalogItem(models.Model):
    revision = models.ForeignKey(CatalogRevision, on_delete=models.CASCADE, related_name="items")
    sku = models.CharField(max_length=200)
    description = models.TextField()
    unit = models.CharField(max_length=50, null=True, blank=True)  # as written in the sheet
    # Its UN/CEFACT Recommendation 20 code (catalog.units); empty when unknown.
    unit_code = models.CharField(max_length=3, blank=True, default="")
    pack_size = models.DecimalField(max_digits=12, decimal_places=3, null=True, blank=True)
    unit_price = models.DecimalField(max_digits=18, decimal_places=6)
    currency = models.CharField(max_length=3)
    source_sheet = models.CharField(max_length=200)
    source_row = models.PositiveIntegerField()

    class Meta:
        indexes = [models.Index(fields=["revision", "sku"])]

    def __str__(self) -> str:
        return f"{self.sku} {self.unit_price} {self.currency}"
