"""Who is calling the API: a bearer token, or the browser's session.

A bearer token is not an ambient credential (the browser never attaches it
on its own), so token requests skip the CSRF check; session requests get it
on every unsafe method, exactly as the CSRF middleware would.
"""

from dataclasses import dataclass

from django.http import HttpRequest
from django.middleware.csrf import CsrfViewMiddleware

from catalog.models import ApiToken
from catalog.services import apitoken_authenticate
from jobs.problems import Problem

MSG_NO_CREDENTIALS = "Send `Authorization: Bearer TOKEN`, or sign in."
MSG_BAD_SCHEME = "Only the Bearer scheme is accepted: `Authorization: Bearer TOKEN`."
MSG_BAD_TOKEN = "The token is unknown or was revoked."
MSG_CSRF = "Session requests that change something need the CSRF token ({reason})."
MSG_READ_ONLY = "This token is read-only: it may read (GET, HEAD) but not change anything."

SAFE_METHODS = ("GET", "HEAD", "OPTIONS", "TRACE")
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="pricesheet"'}


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
        raise Problem(403, "csrf-failed", MSG_CSRF.format(reason=reason))


def authenticate(request: HttpRequest) -> Caller:
    """The caller, or a 401 problem. An Authorization header that does not
    authenticate is refused outright: it never falls back to the session.

    A read-only token is refused here (403) on every unsafe method, so any
    view that authenticates through this function, including views added
    later, is closed to it without a check of its own."""
    header = request.headers.get("Authorization")
    if header is not None:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Problem(401, "invalid-token", MSG_BAD_SCHEME, headers=CHALLENGE)
        row = apitoken_authenticate(token=token.strip())
        if row is None:
            raise Problem(401, "invalid-token", MSG_BAD_TOKEN, headers=CHALLENGE)
        if row.scope == ApiToken.Scope.READ and request.method not in SAFE_METHODS:
            raise Problem(403, "read-only-token", MSG_READ_ONLY)
        return Caller(user=row.user, via="token", scope=row.scope)
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        raise Problem(401, "not-authenticated", MSG_NO_CREDENTIALS, headers=CHALLENGE)
    if request.method not in SAFE_METHODS:
        _enforce_csrf(request)
    return Caller(user=user, via="session")
