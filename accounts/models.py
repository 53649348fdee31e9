"""Tenancy: workspaces, their members and the API tokens of users.

The tables keep the names they were created with (`catalog_*`) when these
models lived in the price domain: moving the models moved no data.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q


class WorkspaceQuerySet(models.QuerySet):
    def for_member(self, user):
        if not user.is_authenticated:
            return self.none()
        return self.filter(memberships__user=user)


class Workspace(models.Model):
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = WorkspaceQuerySet.as_manager()

    class Meta:
        db_table = "catalog_workspace"

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
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)

    objects = MembershipQuerySet.as_manager()

    class Meta:
        db_table = "catalog_membership"
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

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=12, help_text="The first characters, to tell tokens apart.")
    token_hash = models.CharField(max_length=64, unique=True)
    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.FULL)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "catalog_apitoken"
        constraints = [
            models.CheckConstraint(condition=Q(scope__in=["full", "read"]), name="apitoken_scope_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user}, {self.scope})"
