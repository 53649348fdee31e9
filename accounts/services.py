"""Writes of tenancy: workspaces, memberships and API tokens."""

import functools
import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from accounts.models import ApiToken, Membership, Workspace
from config.prepared import prepared_cursor

TOKEN_PREFIX = "psk_"


def workspace_create(*, slug: str, name: str = "") -> Workspace:
    workspace, _ = Workspace.objects.get_or_create(slug=slug, defaults={"name": name or slug})
    return workspace


def membership_add(
    *, workspace: Workspace, username: str, role: str, password: str | None = None, email: str = ""
) -> Membership:
    """Add (or change the role of) a member, creating the user if missing."""
    User = get_user_model()
    with transaction.atomic():
        user, created = User.objects.get_or_create(username=username, defaults={"email": email})
        if password:
            user.set_password(password)
            user.save(update_fields=["password"])
        elif created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        membership, _ = Membership.objects.update_or_create(
            workspace=workspace, user=user, defaults={"role": role}
        )
    return membership


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def apitoken_create(*, user, name: str = "", scope: str = ApiToken.Scope.FULL) -> tuple[ApiToken, str]:
    """Create a bearer token; returns the row and the token, shown only once.
    A `read` token may only read (see accounts.auth.authenticate)."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken.objects.create(
        user=user, name=name, scope=scope, prefix=token[:12], token_hash=_token_hash(token)
    )
    return row, token


def apitoken_authenticate(*, token: str) -> ApiToken | None:
    """The live token row (with its user and scope), or None (unknown, revoked,
    or its user deactivated)."""
    with prepared_cursor() as cursor:
        cursor.execute(_token_lookup_sql(), [_token_hash(token)])
        found = cursor.fetchone()
    if found is None:
        return None
    token_fields, user_fields = _TOKEN_FIELDS, _user_fields()
    row = ApiToken.from_db(connection.alias, token_fields, found[: len(token_fields)])
    user = get_user_model().from_db(connection.alias, user_fields, found[len(token_fields) :])
    ApiToken.user.field.set_cached_value(row, user)
    if not user.is_active:
        return None
    # Recorded to the minute: a write on every request would cost each
    # status read a commit.
    now = timezone.now()
    if row.last_used_at is None or row.last_used_at < now - timedelta(seconds=60):
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
    return row


# What authentication reads of the token; the rest of the row stays deferred.
_TOKEN_FIELDS = ("id", "user_id", "scope", "last_used_at")


@functools.cache
def _user_fields() -> tuple[str, ...]:
    return tuple(field.attname for field in get_user_model()._meta.concrete_fields)


@functools.cache
def _token_lookup_sql() -> str:
    """The token and its user in one statement, written once from the
    models. Every API request runs it: what the ORM would compile for
    `select_related("user").filter(...)` cost more CPU than the round trip."""
    user_model = get_user_model()
    quote = connection.ops.quote_name
    token_columns = [f"t.{quote(ApiToken._meta.get_field(name).column)}" for name in _TOKEN_FIELDS]
    user_columns = [f"u.{quote(field.column)}" for field in user_model._meta.concrete_fields]
    return (
        f"SELECT {', '.join(token_columns + user_columns)} "
        f"FROM {quote(ApiToken._meta.db_table)} t "
        f"JOIN {quote(user_model._meta.db_table)} u "
        f"ON u.{quote(user_model._meta.pk.column)} = t.{quote(ApiToken.user.field.column)} "
        "WHERE t.token_hash = %s AND t.revoked_at IS NULL"
    )


def apitoken_revoke(*, token_id: int) -> None:
    ApiToken.objects.filter(pk=token_id, revoked_at__isnull=True).update(revoked_at=timezone.now())


def signin_failures_clear(*, username: str, ip_address: str | None) -> int:
    """After a successful sign-in: forget the failed ones of this account from
    this address (the user's own typos), and nothing else. Failures from the
    same address against other accounts stay counted, so signing into one's
    own account never resets a guesser's count. Returns how many were removed."""
    from axes.models import AccessAttempt

    if not ip_address:
        return 0
    deleted, _ = AccessAttempt.objects.filter(username=username, ip_address=ip_address).delete()
    return deleted
