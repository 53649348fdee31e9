"""Errors for API clients as `application/problem+json` (RFC 9457).

Every problem has a stable `type` (a path under `/problems/`) that clients
branch on; `title` is fixed per type, `detail` explains this occurrence.
An unexpected exception becomes a `500` problem with no stack trace in it.
"""

import functools
import json
import logging
from collections.abc import Callable

from django.core.exceptions import PermissionDenied, RequestDataTooBig, TooManyFieldsSent
from django.http import Http404, HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError

from accounts.auth import CHALLENGE, AuthenticationFailed, CsrfFailed, ReadOnlyToken
from jobs.errors import InsufficientStorage
from jobs.models import Job
from jobs.services import IdempotencyConflict, InvalidTransition, VersionConflict

log = logging.getLogger("jobs.api")

CONTENT_TYPE = "application/problem+json"
TYPE_PREFIX = "/problems/"

TITLES = {
    "invalid-request": "The request is not valid",
    "idempotency-key-required": "An Idempotency-Key header is required",
    "idempotency-key-reused": "The Idempotency-Key was used for another request",
    "not-authenticated": "Authentication is required",
    "invalid-token": "The bearer token is not valid",
    "csrf-failed": "The CSRF check failed",
    "forbidden": "Not allowed",
    "read-only-token": "A read-only token cannot change anything",
    "no-workspace": "You are not a member of any workspace",
    "workspace-required": "Say which workspace the upload is for",
    "not-found": "Not found",
    "not-acceptable": "None of the accepted media types can be produced",
    "method-not-allowed": "Method not allowed",
    "not-cancellable": "The job cannot be cancelled in its current state",
    "version-conflict": "The job changed since you read it",
    "upload-too-large": "The upload is too large",
    "body-too-large": "The request body is too large",
    "length-required": "A Content-Length is required",
    "empty-file": "The uploaded file is empty",
    "unsupported-media-type": "The uploaded file is not of a kind this service reads",
    "too-many-requests": "Too many requests",
    "internal-error": "Internal server error",
    "page-out-of-range": "The page is past the last page",
    "insufficient-storage": "There is no room to store the upload",
}


def register_titles(titles: dict[str, str]) -> None:
    """A job kind's own problem types (its title per type); a type is
    registered once, with one title."""
    for type_, title in titles.items():
        if TITLES.get(type_, title) != title:
            raise ValueError(f"problem type {type_!r} is already registered with another title")
        TITLES[type_] = title


# One body for "no such job" and "a job of a workspace you are not in": the
# two must be indistinguishable, so the detail never names the id.
NOT_FOUND_DETAIL = "No job with this id exists in your workspaces."


class Problem(Exception):
    """Raised anywhere under an API view; rendered by `problem_response`."""

    def __init__(
        self,
        status: int,
        type_: str,
        detail: str = "",
        *,
        headers: dict[str, str] | None = None,
        **extensions,
    ):
        super().__init__(detail or TITLES[type_])
        self.status = status
        self.type = type_
        self.detail = detail
        self.headers = headers or {}
        self.extensions = extensions


def problem_response(problem: Problem) -> HttpResponse:
    body = {"type": TYPE_PREFIX + problem.type, "title": TITLES[problem.type], "status": problem.status}
    if problem.detail:
        body["detail"] = problem.detail
    body.update(problem.extensions)
    response = HttpResponse(json.dumps(body), status=problem.status, content_type=CONTENT_TYPE)
    for name, value in problem.headers.items():
        response[name] = value
    return response


def not_found() -> Problem:
    return Problem(404, "not-found", NOT_FOUND_DETAIL)


_PROBLEM_OF: dict[type[BaseException], Callable[[BaseException], Problem]] = {}


def problem_for(exc_class: type[BaseException]) -> Callable:
    """Register the problem an exception class of a job kind stands for."""

    def register(make: Callable[[BaseException], Problem]) -> Callable[[BaseException], Problem]:
        if exc_class in _PROBLEM_OF:
            raise ValueError(f"{exc_class.__name__} already has a problem")
        _PROBLEM_OF[exc_class] = make
        return make

    return register


def problem_from_exception(exc: BaseException) -> Problem:
    """The problem an exception stands for; unknown exceptions are a 500."""
    if isinstance(exc, Problem):
        return exc
    for cls in type(exc).__mro__:
        if cls in _PROBLEM_OF:
            return _PROBLEM_OF[cls](exc)
    if isinstance(exc, AuthenticationFailed):
        return Problem(401, exc.code, exc.detail, headers=CHALLENGE)
    if isinstance(exc, CsrfFailed):
        return Problem(403, "csrf-failed", str(exc))
    if isinstance(exc, ReadOnlyToken):
        return Problem(403, "read-only-token", str(exc))
    if isinstance(exc, (Http404, Job.DoesNotExist)):
        return not_found()
    if isinstance(exc, VersionConflict):
        return Problem(409, "version-conflict", str(exc), state=exc.state, version=exc.actual)
    if isinstance(exc, InvalidTransition):
        return Problem(
            409,
            "not-cancellable" if exc.transition == "cancel" else "invalid-request",
            str(exc),
            state=exc.state,
        )
    if isinstance(exc, IdempotencyConflict):
        return Problem(
            422,
            "idempotency-key-reused",
            "This Idempotency-Key was already used with another request; use a new key for a new upload.",
        )
    if isinstance(exc, (RequestDataTooBig, TooManyFieldsSent, MultiPartParserError)):
        return Problem(400, "invalid-request", f"The request body could not be read: {exc}")
    if isinstance(exc, PermissionDenied):
        return Problem(403, "forbidden", str(exc))
    if isinstance(exc, InsufficientStorage):
        log.error("no room to store an upload: %s", exc.__cause__)
        return Problem(507, "insufficient-storage", str(exc), headers={"Retry-After": "60"})
    log.exception("unexpected error in an API view", exc_info=exc)
    return Problem(500, "internal-error", "The error was logged; try again later.")


# API answers are per caller: no shared cache may keep one. A view that
# supports revalidation (ETag) sets its own `private, no-cache`.
DEFAULT_CACHE_CONTROL = "private, no-store"


def api_view(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Turn whatever a view raises into a problem response, never a traceback."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            response = view(request, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001  every error leaves as a problem
            response = problem_response(problem_from_exception(exc))
        if not response.has_header("Cache-Control"):
            response["Cache-Control"] = DEFAULT_CACHE_CONTROL
        return response

    return wrapper
