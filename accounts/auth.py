"""Who is calling the API: a bearer token, or the browser's session.

A bearer token is not an ambient credential (the browser never attaches it
on its own), so token requests skip the CSRF check; session requests get it
on every unsafe method, exactly as the CSRF middleware would.

Failures raise `AuthenticationFailed`, `ReadOnlyToken` or `CsrfFailed`;
the API layer turns them into problem responses.
"""

from dataclasses import dataclass

from django.http import HttpRequest
from django.middleware.csrf import CsrfViewMiddleware

from accounts.models import ApiToken
from accounts.services import apitoken_authenticate

MSG_NO_CREDENTIALS = "Send `Authorization: Bearer TOKEN`, or sign in."
MSG_BAD_SCHEME = "Only the Bearer scheme is accepted: `Authorization: Bearer TOKEN`."
MSG_BAD_TOKEN = "The token is unknown or was revoked."
MSG_CSRF = "Session requests that change something need the CSRF token ({reason})."
MSG_READ_ONLY = "This token is read-only: it may read (GET, HEAD) but not change anything."

SAFE_METHODS = ("GET", "HEAD", "OPTIONS", "TRACE")
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="pricesheet"'}


class AuthenticationFailed(Exception):
    """No usable credentials. `code` is `not-authenticated` (none sent) or
    `invalid-token` (a header that does not authenticate)."""

    def __init__(self, code: str, detail: str):
        super().__init__(detail)
        self.code = code
        self.detail = detail


class CsrfFailed(Exception):
    """A session request that changes something came without a valid CSRF token."""


class ReadOnlyToken(Exception):
    """A read-only token was sent with a method that changes something."""


@dataclass(frozen=True)
class Caller:
    user: object
    via: str  # "token" or "session"
    scope: str = "full"  # a token's scope; a session may do what its user may


class _CsrfCheck(CsrfViewMiddleware):
    """The middleware's own check, answering with the reason instead of a page."""

    def _reject(self, request, reason):
        return reason


def _enforce_csrf(request: HttpRequest) -> None:
    check = _CsrfCheck(lambda req: None)
    check.process_request(request)
    reason = check.process_view(request, None, (), {})
    if reason:
        raise CsrfFailed(MSG_CSRF.format(reason=reason))


def authenticate(request: HttpRequest) -> Caller:
    """The caller, or AuthenticationFailed. An Authorization header that does
    not authenticate is refused outright: it never falls back to the session.

    A read-only token is refused here (ReadOnlyToken, a 403) on every unsafe
    method, so any view that authenticates through this function, including
    views added later, is closed to it without a check of its own."""
    # META, not request.headers: that builds a mapping of every header.
    header = request.META.get("HTTP_AUTHORIZATION")
    if header is not None:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthenticationFailed("invalid-token", MSG_BAD_SCHEME)
        row = apitoken_authenticate(token=token.strip())
        if row is None:
            raise AuthenticationFailed("invalid-token", MSG_BAD_TOKEN)
        if row.scope == ApiToken.Scope.READ and request.method not in SAFE_METHODS:
            raise ReadOnlyToken(MSG_READ_ONLY)
        return Caller(user=row.user, via="token", scope=row.scope)
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        raise AuthenticationFailed("not-authenticated", MSG_NO_CREDENTIALS)
    if request.method not in SAFE_METHODS:
        _enforce_csrf(request)
    return Caller(user=user, via="session")
