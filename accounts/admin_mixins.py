"""Shared admin behaviour."""


class ReadOnlyAdminMixin:
    """History and rows only services write: shown in the admin, never added,
    edited or deleted there. For ModelAdmins and inlines alike."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
