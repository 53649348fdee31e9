"""Every API answer the test suite receives is validated against the OpenAPI
document (`/api/openapi.json`), by a middleware the test settings add.

A mismatch is recorded, not raised (the answer may be on its way to a
browser on the live server); `tests/conftest.py` fails the test that
received it. Answers to addresses or methods that are not endpoints (404 and
405 from the catch-all or from a view's method check) describe nothing and
are skipped, and so is a read-only token's 403 to such a method; any other answer to an undescribed operation is a failure.
"""

from __future__ import annotations

import functools
import threading

from openapi_core import Config, OpenAPI
from openapi_core.contrib.django import DjangoOpenAPIRequest, DjangoOpenAPIResponse
from openapi_core.deserializing.media_types.util import json_loads
from openapi_core.templating.paths.exceptions import OperationNotFound, PathNotFound


def is_catch_all(view) -> bool:
    return bool(getattr(view, "catch_all", False))


class _Request(DjangoOpenAPIRequest):
    """Only the answer is validated here: the request body, which a
    multipart upload has already consumed, is never needed."""

    @property
    def body(self) -> bytes:
        return b""


FAILURES: list[str] = []
CHECKED: list[tuple[str, str, int]] = []  # (method, route, status) of every validated answer
_lock = threading.Lock()


def _text(data: bytes | str, **parameters) -> str:
    return data if isinstance(data, str) else data.decode(parameters.get("charset", "utf-8"))


@functools.cache
def openapi() -> OpenAPI:
    # openapi-core reads only application/json as JSON (problem+json is JSON
    # too) and hands other bodies over as bytes (text ones are strings).
    config = Config(
        extra_media_type_deserializers={
            "application/problem+json": json_loads,
            "text/csv": _text,
            "text/html": _text,
        }
    )
    from config.api_urls import api

    return OpenAPI.from_dict(api.document, config=config)


def check(request, response) -> str | None:
    """What is wrong with this answer, or None."""
    match = request.resolver_match
    if match is None or is_catch_all(match.func):
        return None
    try:
        openapi().validate_response(_Request(request), DjangoOpenAPIResponse(response))
    except (PathNotFound, OperationNotFound) as exc:
        if response.status_code in (404, 405):
            return None
        if response.status_code == 403 and b"/problems/read-only-token" in response.content:
            return None  # a read token's change, refused before the method is looked at
        return f"undescribed operation answered {response.status_code}: {exc}"
    except Exception as exc:  # noqa: BLE001  every validation error is reported with its cause
        cause = exc.__cause__ or exc
        details = getattr(cause, "schema_errors", None) or [cause]
        return f"{type(exc).__name__}: " + "; ".join(str(d)[:400] for d in details)
    with _lock:
        CHECKED.append((request.method, match.route, response.status_code))
    return None


class OpenApiCheck:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        # schemathesis checks its own answers against the same document.
        generated = "HTTP_X_SCHEMATHESIS_TESTCASEID" in request.META
        if request.path.startswith("/api/") and request.method not in ("HEAD", "OPTIONS") and not generated:
            failure = check(request, response)
            if failure:
                with _lock:
                    FAILURES.append(
                        f"{request.method} {request.get_full_path()} -> {response.status_code}: {failure}"
                    )
        return response
