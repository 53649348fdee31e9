"""The admin console for the price domain. Uploaded sheets and published
revisions are history and read-only. The job admin of `jobs` is extended
here with what only the price domain knows: a job's uploaded sheet, and
finding jobs by the file name."""

import contextlib
import uuid

from django.contrib import admin
from django.db.models import OuterRef, Q, Subquery, UUIDField
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from django.urls import reverse
from django.utils.html import format_html

from accounts.admin_mixins import ReadOnlyAdminMixin
from catalog.mapping import ROLES
from catalog.models import (
    CatalogItem,
    CatalogRevision,
    PriceSheet,
    Supplier,
    SupplierLayout,
)
from jobs.admin import JobAdmin
from jobs.models import Job


@admin.register(Supplier)
class SupplierAdmin(admin.ModelAdmin):
    list_display = ["name", "workspace", "current_revision", "created_at"]
    list_filter = ["workspace"]
    list_select_related = ["workspace", "current_revision"]
    search_fields = ["name"]
    # The current revision moves only with a publication.
    readonly_fields = ["current_revision"]


@admin.register(PriceSheet)
class PriceSheetAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "original_name",
        "workspace",
        "supplier",
        "size",
        "short_sha256",
        "uploaded_by",
        "created_at",
    ]
    list_filter = ["workspace"]
    list_select_related = ["workspace", "supplier", "uploaded_by"]
    search_fields = ["original_name", "sha256"]
    fields = [
        "id",
        "original_name",
        "workspace",
        "supplier",
        "size",
        "sha256",
        "content_type",
        "storage_path",
        "uploaded_by",
        "created_at",
        "jobs",
    ]
    readonly_fields = fields

    @admin.display(description="sha256")
    def short_sha256(self, sheet: PriceSheet) -> str:
        return sheet.sha256[:12]

    @admin.display(description="jobs")
    def jobs(self, sheet: PriceSheet) -> str:
        url = reverse("admin:jobs_job_changelist") + f"?q={sheet.pk}"
        return format_html('<a href="{}">jobs that read this sheet</a>', url)


class CatalogItemInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = CatalogItem
    extra = 0
    max_num = 0
    can_delete = False
    fields = [
        "sku",
        "description",
        "unit",
        "pack_size",
        "unit_price",
        "currency",
        "source_sheet",
        "source_row",
    ]
    readonly_fields = fields

    def has_view_permission(self, request, obj=None) -> bool:
        return request.user.has_perm("catalog.view_catalogrevision")


@admin.register(CatalogRevision)
class CatalogRevisionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "id",
        "workspace",
        "supplier",
        "job_link",
        "attempt",
        "item_count",
        "published_at",
        "approved_by",
    ]
    list_filter = ["workspace"]
    list_select_related = ["workspace", "supplier", "approved_by"]
    fields = ["workspace", "supplier", "job_link", "attempt", "item_count", "published_at", "approved_by"]
    readonly_fields = fields
    inlines = [CatalogItemInline]

    @admin.display(description="job")
    def job_link(self, revision: CatalogRevision) -> str:
        url = reverse("admin:jobs_job_change", args=[revision.job_id])
        return format_html('<a href="{}">{}</a>', url, str(revision.job_id)[:8])


class SheetJobAdmin(JobAdmin):
    """The generic job admin, plus the uploaded sheet of `parse_sheet` jobs:
    its file and supplier as list columns, and finding jobs by the file's
    name. The job's page shows what the kind registers (catalog.job_admin)."""

    list_display = [*JobAdmin.list_display[:4], "file", "supplier", *JobAdmin.list_display[4:]]

    def get_queryset(self, request):
        # The file and supplier come from the sheet the payload names, in the
        # list's own query.
        sheets = PriceSheet.objects.filter(
            pk=Cast(KeyTextTransform("sheet_id", OuterRef("payload")), UUIDField())
        )
        return (
            super()
            .get_queryset(request)
            .annotate(
                file_name=Subquery(sheets.values("original_name")[:1]),
                supplier_label=Subquery(sheets.values("supplier_name")[:1]),
            )
        )

    @admin.display(description="file", ordering="file_name")
    def file(self, job: Job) -> str:
        return getattr(job, "file_name", None) or "-"

    @admin.display(description="supplier", ordering="supplier_label")
    def supplier(self, job: Job) -> str:
        return getattr(job, "supplier_label", None) or "-"

    search_help_text = "Job id (or its first characters), idempotency key, or uploaded file name."

    def search_matches(self, term: str) -> Q:
        matches = super().search_matches(term)
        with contextlib.suppress(ValueError):  # a term that is no sheet id searches by the rest
            matches |= Q(payload__sheet_id=str(uuid.UUID(term)))
        # The file name lives on the uploaded PriceSheet; jobs name it by id.
        sheet_ids = [
            str(pk)
            for pk in PriceSheet.objects.filter(original_name__icontains=term).values_list("pk", flat=True)[
                :1000
            ]
        ]
        if sheet_ids:
            matches |= Q(payload__sheet_id__in=sheet_ids)
        return matches


admin.site.unregister(Job)
admin.site.register(Job, SheetJobAdmin)


@admin.register(SupplierLayout)
class SupplierLayoutAdmin(admin.ModelAdmin):
    """Remembered column layouts: staff see them and delete the ones that
    should no longer be used (the supplier's next sheet is then inferred);
    they are written only by a reviewer's approval."""

    list_display = ("supplier", "workspace", "sheet_names", "approved_by_name", "approved_at", "job")
    list_filter = ("workspace",)
    search_fields = ("supplier__name", "sheet_names", "approved_by_name")
    readonly_fields = (
        "workspace",
        "supplier",
        "sheet_names",
        "mapping_text",
        "signature",
        "approved_by_name",
        "approved_at",
        "job",
    )
    fields = readonly_fields

    @admin.display(description="mapping")
    def mapping_text(self, obj: SupplierLayout) -> str:
        lines = []
        for entry in (obj.mapping or {}).get("sheets") or []:
            header = entry.get("header_row") or "none"
            given = entry.get("columns") or {}
            columns = ", ".join(f"{role} {given[role]}" for role in ROLES if given.get(role))
            matrix = entry.get("matrix")
            if isinstance(matrix, dict):
                columns = (
                    f"price matrix, row labels {', '.join(matrix.get('row_labels') or [])}, "
                    f"body {matrix.get('body')}"
                )
            lines.append(f"{entry.get('sheet')}: header row {header}; {columns}")
        currency = (obj.mapping or {}).get("currency")
        if currency:
            lines.append(f"currency {currency}")
        return " | ".join(lines)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        # Viewable (the change form is read-only), never edited by hand.
        return False
