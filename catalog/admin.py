"""The admin console for the price domain. Uploaded sheets and published
revisions are history and read-only; API tokens are created here or by
`manage.py createapitoken` (either shows the token once) and revoked here."""

from collections import Counter

from django import forms
from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html

from catalog.models import (
    ApiToken,
    CatalogItem,
    CatalogRevision,
    Membership,
    PriceSheet,
    Supplier,
    Workspace,
)
from catalog.services import apitoken_create, apitoken_revoke
from jobs.admin_mixins import ReadOnlyAdminMixin

MSG_TOKENS_REVOKED = "{count} token(s) revoked."
MSG_TOKENS_ALREADY_REVOKED = "{count} token(s) were already revoked."
MSG_TOKEN_CREATED = ("Token for {user} ({scope}): {token} — copy it now, it is not shown again "
                     "(only its hash is stored).")
TOKEN_LIST_TITLE = "API tokens (or: manage.py createapitoken USERNAME [--scope read])"


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ["user"]


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "created_at"]
    search_fields = ["slug", "name"]
    inlines = [MembershipInline]


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
    list_display = ["original_name", "workspace", "supplier", "size", "short_sha256",
                    "uploaded_by", "created_at"]
    list_filter = ["workspace"]
    list_select_related = ["workspace", "supplier", "uploaded_by"]
    search_fields = ["original_name", "sha256"]
    fields = ["id", "original_name", "workspace", "supplier", "size", "sha256", "content_type",
              "storage_path", "uploaded_by", "created_at", "jobs"]
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
    fields = ["sku", "description", "unit", "pack_size", "unit_price", "currency",
              "source_sheet", "source_row"]
    readonly_fields = fields

    def has_view_permission(self, request, obj=None) -> bool:
        return request.user.has_perm("catalog.view_catalogrevision")


@admin.register(CatalogRevision)
class CatalogRevisionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["id", "workspace", "supplier", "job_link", "attempt", "item_count",
                    "published_at", "approved_by"]
    list_filter = ["workspace"]
    list_select_related = ["workspace", "supplier", "approved_by"]
    fields = ["workspace", "supplier", "job_link", "attempt", "item_count", "published_at",
              "approved_by"]
    readonly_fields = fields
    inlines = [CatalogItemInline]

    @admin.display(description="job")
    def job_link(self, revision: CatalogRevision) -> str:
        url = reverse("admin:jobs_job_change", args=[revision.job_id])
        return format_html('<a href="{}">{}</a>', url, str(revision.job_id)[:8])


class ApiTokenCreationForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ["user", "name", "scope"]


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """A token is created here (shown once, in a message) and then only
    revoked; a revoked token stays on record."""

    list_display = ["prefix", "name", "user", "scope", "status", "created_at", "last_used_at",
                    "revoked_at"]
    list_filter = ["scope", ("revoked_at", admin.EmptyFieldListFilter)]
    list_select_related = ["user"]
    search_fields = ["prefix", "name", "user__username"]
    fields = ["user", "name", "scope", "prefix", "token_hash", "created_at", "last_used_at",
              "revoked_at"]
    readonly_fields = fields
    add_form = ApiTokenCreationForm
    raw_id_fields = ["user"]
    actions = ["revoke"]

    def has_add_permission(self, request, obj=None) -> bool:
        return request.user.has_perm("catalog.add_apitoken")

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = self.add_form
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        return ["user", "name", "scope"] if obj is None else self.fields

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly_fields

    def save_model(self, request, obj, form, change) -> None:
        if change:
            return  # tokens are never edited
        row, token = apitoken_create(user=form.cleaned_data["user"], name=form.cleaned_data["name"],
                                     scope=form.cleaned_data["scope"])
        obj.pk = row.pk  # the admin redirects to the row it believes it saved
        self.message_user(request, MSG_TOKEN_CREATED.format(user=row.user, scope=row.scope,
                                                            token=token), messages.WARNING)

    def has_revoke_permission(self, request) -> bool:
        return request.user.has_perm("catalog.change_apitoken")

    @admin.display(description="status")
    def status(self, token: ApiToken) -> str:
        return "revoked" if token.revoked_at else "active"

    def changelist_view(self, request, extra_context=None):
        return super().changelist_view(request, {"title": TOKEN_LIST_TITLE, **(extra_context or {})})

    @admin.action(permissions=["revoke"], description="Revoke selected tokens")
    def revoke(self, request, queryset):
        outcome = Counter()
        for pk, revoked_at in queryset.values_list("pk", "revoked_at"):
            if revoked_at is not None:
                outcome["already"] += 1
                continue
            apitoken_revoke(token_id=pk)
            outcome["revoked"] += 1
        if outcome["revoked"]:
            self.message_user(request, MSG_TOKENS_REVOKED.format(count=outcome["revoked"]),
                              messages.SUCCESS)
        if outcome["already"]:
            self.message_user(request, MSG_TOKENS_ALREADY_REVOKED.format(count=outcome["already"]),
                              messages.WARNING)
