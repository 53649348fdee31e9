"""The admin console for tenancy: workspaces with their members, and API
tokens. A token is created here or by `manage.py createapitoken` (either
shows the token once) and revoked here; a revoked token stays on record."""

from collections import Counter

from django import forms
from django.contrib import admin, messages

from accounts.admin_mixins import ReadOnlyAdminMixin
from accounts.models import ApiToken, Membership, Workspace
from accounts.services import apitoken_create, apitoken_revoke

MSG_TOKENS_REVOKED = "{count} token(s) revoked."
MSG_TOKENS_ALREADY_REVOKED = "{count} token(s) were already revoked."
MSG_TOKEN_CREATED = (
    "Token for {user} ({scope}): {token} — copy it now, it is not shown again (only its hash is stored)."
)
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


class ApiTokenCreationForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ["user", "name", "scope"]


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """A token is created here (shown once, in a message) and then only
    revoked; a revoked token stays on record."""

    list_display = ["prefix", "name", "user", "scope", "status", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["scope", ("revoked_at", admin.EmptyFieldListFilter)]
    list_select_related = ["user"]
    search_fields = ["prefix", "name", "user__username"]
    fields = ["user", "name", "scope", "prefix", "token_hash", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = fields
    add_form = ApiTokenCreationForm
    raw_id_fields = ["user"]
    actions = ["revoke"]

    def has_add_permission(self, request, obj=None) -> bool:
        return request.user.has_perm("accounts.add_apitoken")

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
        row, token = apitoken_create(
            user=form.cleaned_data["user"], name=form.cleaned_data["name"], scope=form.cleaned_data["scope"]
        )
        obj.pk = row.pk  # the admin redirects to the row it believes it saved
        self.message_user(
            request, MSG_TOKEN_CREATED.format(user=row.user, scope=row.scope, token=token), messages.WARNING
        )

    def has_revoke_permission(self, request) -> bool:
        return request.user.has_perm("accounts.change_apitoken")

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
            self.message_user(request, MSG_TOKENS_REVOKED.format(count=outcome["revoked"]), messages.SUCCESS)
        if outcome["already"]:
            self.message_user(
                request, MSG_TOKENS_ALREADY_REVOKED.format(count=outcome["already"]), messages.WARNING
            )
