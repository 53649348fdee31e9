"""Reads of tenancy shared by the API, the pages and the admin."""

from accounts.models import Workspace


def workspaces_of(user) -> list[Workspace]:
    """The workspaces a user is a member of, by slug."""
    return list(Workspace.objects.for_member(user).order_by("slug"))
