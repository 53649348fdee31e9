"""The HTTP API's framework pieces, generic over job kinds (django-ninja).

Each endpoint's typed signature is both its request parser and its OpenAPI
description; this module adds what every endpoint shares: authentication
(a bearer token or the browser session, `accounts.auth`), a bounded JSON
parser, problem+json answers for every error, one paginator, the method and
catch-all answers, and `DescribedAPI`, which completes the generated
document with what the framework does not know (problem+json error bodies,
the answers every authenticated operation may give, response headers).

The generic job endpoints live here too: the versioned cancel, which needs
nothing of any job kind.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
import uuid
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

from django.conf import settings
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.shortcuts import render
from django.urls import URLPattern
from django.utils.http import urlencode
from ninja import Header, NinjaAPI, Router, Schema
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser
from ninja.security import APIKeyCookie, HttpBearer
from pydantic import BeforeValidator, ConfigDict, Field, StrictBool

from accounts.auth import SAFE_METHODS, Caller, ReadOnlyToken, authenticate
from jobs.models import Job, State
from jobs.problems import (
    CONTENT_TYPE as PROBLEM_JSON,
    DEFAULT_CACHE_CONTROL,
    Problem,
    api_view,
    not_found,
    problem_from_exception,
    problem_response,
)
from jobs.selectors import jobs_with_live_phase
from jobs.services import job_cancel

log = logging.getLogger("jobs.api")

JSON = "application/json"
MSG_NO_ENDPOINT = "There is no API endpoint at this address."
MSG_METHOD = "Use {allowed}."
MSG_PAGE_OUT_OF_RANGE = "Page {page} is past the last page ({last}; {count} in all)."
MSG_BODY_TOO_LARGE = "The JSON body is larger than {limit} bytes."
MSG_TOO_DEEP = "The JSON body is nested deeper than {limit} levels."
MSG_NOT_UTF8 = "The body is not UTF-8 text."
MSG_BAD_JSON = "The body is not valid JSON: {error}."
MSG_BAD_IF_MATCH = '`If-Match` must be a version in quotes, `"N"`.'
MSG_KEY_REQUIRED = "Send an `Idempotency-Key` header (any unique string, e.g. a UUID) with each upload."
MSG_EMPTY_FILE = "The uploaded file `{field}` has no content."
MSG_UNKNOWN_FIELD = "Unknown field; the fields are those the API reference lists for this body."

# Limits every input shares; the document states each (minimum, maximum).
MAX_PAGE = 10_000
JSON_MAX_DEPTH = 32
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(rb"[\[\]{}]")


# --- shapes ------------------------------------------------------------------------


class Open(Schema):
    """An answer object: clients must accept members not listed (adding one
    is not a breaking change)."""

    model_config = ConfigDict(extra="allow")


class ProblemOut(Schema):
    """An error (RFC 9457). Clients branch on `type`; more members may follow."""

    model_config = ConfigDict(extra="allow", title="Problem")

    type: str
    title: str
    status: int
    detail: str | None = None


JobState = Literal[tuple(State.values)]  # type: ignore[valid-type]


def _json_number(value: Any) -> Any:
    """A JSON number only: no `true`, no `"5"` (the document says number)."""
    if isinstance(value, (bool, str)):
        raise ValueError("must be a JSON number")
    return value


def _json_whole(value: Any) -> Any:
    value = _json_number(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# Integers of JSON bodies as JSON Schema reads them (`1.0` is an integer,
# `true` and `"1"` are not).
def json_int(**constraints: Any) -> Any:
    """A JSON integer with its bounds (stated in the document, checked by the parser)."""
    return Annotated[int, Field(**constraints), BeforeValidator(_json_whole)]


JsonBool = StrictBool
MAX_VERSION = 2**31 - 1
Version = json_int(ge=1, le=MAX_VERSION, description="The job's version as you read it.")


class Progress(Open):
    done: int
    total: int


class Timings(Open):
    waiting_seconds: float
    running_seconds: float
    review_seconds: float


class JobVersion(Open):
    id: uuid.UUID
    state: JobState
    version: int


class PageOut(Open):
    """One page of a collection: `next` and `previous` are links, null at the ends."""

    count: int
    next: str | None
    previous: str | None


class CancelRequest(Schema):
    model_config = ConfigDict(extra="forbid")

    version: json_int(ge=1, le=MAX_VERSION) | None = Field(
        None, description="Cancel only if the job is still at this version."
    )


def paging(*, default: int, maximum: int) -> type[Schema]:
    """The query of a paginated collection, with its limits stated."""

    class Paging(Schema):
        page: int = Field(1, ge=1, le=MAX_PAGE, description="From 1.")
        page_size: int = Field(default, ge=1, le=maximum, description=f"At most {maximum}.")

    return Paging


def paginate(request: HttpRequest, rows: QuerySet | Sequence, *, page: int, page_size: int) -> dict:
    """The page of `rows` (already ordered: a queryset, or anything with
    `len()` and slices) as `{results, count, next, previous}`. A page past
    the last is a 404 naming the last page (page 1 always exists): an empty
    page would link to another page past the end."""
    count = rows.count() if isinstance(rows, QuerySet) else len(rows)
    last = max(1, math.ceil(count / page_size))
    if page > last:
        raise Problem(
            404,
            "page-out-of-range",
            MSG_PAGE_OUT_OF_RANGE.format(page=page, last=last, count=count),
            last_page=last,
        )
    start = (page - 1) * page_size

    def link(number: int) -> str:
        params = request.GET.copy()
        params["page"] = str(number)
        params["page_size"] = str(page_size)
        return f"{request.path}?{urlencode(sorted(params.lists()), doseq=True)}"

    return {
        "results": list(rows[start : start + page_size]),
        "count": count,
        "next": link(page + 1) if page < last else None,
        "previous": link(page - 1) if page > 1 else None,
    }


# --- authentication ------------------------------------------------------------------


class BearerToken(HttpBearer):
    """`Authorization: Bearer TOKEN` (a `read` token may only read)."""

    def __call__(self, request: HttpRequest) -> Caller:
        return authenticate(request)

    def authenticate(self, request: HttpRequest, token: str) -> Caller:
        return authenticate(request)


class BrowserSession(APIKeyCookie):
    """The browser's session cookie; changes need the CSRF token."""

    param_name = settings.SESSION_COOKIE_NAME

    def __call__(self, request: HttpRequest) -> Caller:
        return authenticate(request)

    def authenticate(self, request: HttpRequest, key: str | None) -> Caller:
        return authenticate(request)


API_AUTH = [BearerToken(), BrowserSession()]


def caller(request: HttpRequest) -> Caller:
    return request.auth  # set by the operation's authentication


# --- the body parser -----------------------------------------------------------------


def json_depth(body: bytes) -> int:
    """How deep arrays and objects nest in a JSON text (strings skipped): a
    linear scan, so a deep body is refused before the recursive parser runs."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRINGS.sub(b"", body)):
        depth += 1 if bracket in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest


class BoundedJsonParser(Parser):
    """JSON bodies within `API_JSON_MAX_BYTES` and `JSON_MAX_DEPTH`; a form
    body is read as a flat object (the page's forms post the same fields)."""

    def parse_body(self, request: HttpRequest) -> Any:
        if request.content_type in ("multipart/form-data", "application/x-www-form-urlencoded"):
            return request.POST.dict()
        limit = settings.API_JSON_MAX_BYTES
        body = request.body
        if len(body) > limit:
            raise Problem(413, "body-too-large", MSG_BODY_TOO_LARGE.format(limit=limit), limit_bytes=limit)
        if json_depth(body) > JSON_MAX_DEPTH:
            raise Problem(400, "invalid-request", MSG_TOO_DEEP.format(limit=JSON_MAX_DEPTH))
        try:
            return json.loads(body.decode("utf-8"))
        except UnicodeDecodeError:
            raise Problem(400, "invalid-request", MSG_NOT_UTF8) from None
        except ValueError as exc:
            raise Problem(400, "invalid-request", MSG_BAD_JSON.format(error=exc)) from None


# --- errors --------------------------------------------------------------------------


def _where(loc: tuple) -> str:
    """`("body", "payload", "items", 0, "set")` -> `items[0].set`."""
    parts = list(loc[1:])
    if loc and loc[0] == "body" and len(parts) > 1:
        parts = parts[1:]
    text = ""
    for part in parts:
        if part == "[key]":
            continue
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or str(loc[0] if loc else "body")


def validation_problem(errors: list[dict]) -> Problem:
    """A 400 naming each input that is wrong and why."""
    listed = []
    for error in errors:
        where = _where(tuple(error.get("loc", ())))
        message = MSG_UNKNOWN_FIELD if error.get("type") == "extra_forbidden" else error.get("msg", "")
        if "[key]" in error.get("loc", ()):
            message = f"not a field name; {message[:1].lower()}{message[1:]}"
        if error.get("type") == "missing" and where.lower() == "idempotency-key":
            return Problem(400, "idempotency-key-required", MSG_KEY_REQUIRED)
        if error.get("type") == "too_short" and tuple(error.get("loc", ()))[:1] == ("file",):
            return Problem(400, "empty-file", MSG_EMPTY_FILE.format(field=where))
        listed.append({"field": where, "message": message})
    detail = "; ".join(f"`{e['field']}`: {e['message']}" for e in listed)
    return Problem(400, "invalid-request", detail, errors=listed)


def _on_validation(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    return problem_response(validation_problem(list(exc.errors)))


def _on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, Problem):
        return problem_response(exc.__cause__)
    if isinstance(exc, AuthenticationError):
        return problem_response(problem_from_exception(exc))
    return problem_response(Problem(exc.status_code, "invalid-request", str(exc)))


def _on_exception(request: HttpRequest, exc: Exception) -> HttpResponse:
    return problem_response(problem_from_exception(exc))


# --- the document ----------------------------------------------------------------------


def answers(
    *,
    problems: dict[int, str] | None = None,
    descriptions: dict[int, str] | None = None,
    headers: dict[int, dict[str, str]] | None = None,
    media: dict[int, dict[str, dict]] | None = None,
) -> Callable:
    """Complete an operation's answers: the problems it may answer (status:
    when), a description per answer, the headers of an answer (name: what it
    says) and further media types of an answer (for example CSV beside JSON)."""

    def contribute(operation) -> None:
        for status in problems or {}:
            operation.response_models[status] = operation._create_response_model(ProblemOut)
        extra: dict[int, dict] = {}
        for status, text in {**(problems or {}), **(descriptions or {})}.items():
            extra.setdefault(status, {})["description"] = text
        for status, named in (headers or {}).items():
            extra.setdefault(status, {})["headers"] = {
                name: {"description": text, "schema": {"type": "string"}} for name, text in named.items()
            }
        for status, bodies in (media or {}).items():
            extra.setdefault(status, {})["content"] = bodies
        operation.openapi_extra = {**(operation.openapi_extra or {}), "responses": extra}

    def decorate(view: Callable) -> Callable:
        view._ninja_contribute_to_operation = [
            *getattr(view, "_ninja_contribute_to_operation", []),
            contribute,
        ]
        return view

    return decorate


PROBLEM_REF = f"#/components/schemas/{ProblemOut.__name__}"
GENERIC_ANSWERS = {
    "400": "A parameter or the body is not valid (`errors` names each).",
    "401": "No credentials, or a token that is unknown or revoked.",
    "403": "Not allowed: a read-only token, a failed CSRF check, or a missing role.",
    "413": "The body is larger than the server accepts.",
}


def _problem_content() -> dict:
    return {PROBLEM_JSON: {"schema": {"$ref": PROBLEM_REF}}}


def _complete(operation: dict, method: str) -> None:
    responses = {str(status): answer for status, answer in operation["responses"].items()}
    for answer in responses.values():
        content = answer.get("content", {})
        if content.get(JSON, {}).get("schema", {}).get("$ref") == PROBLEM_REF:
            answer["content"] = _problem_content()
    needed = []
    if operation.get("parameters") or operation.get("requestBody"):
        needed.append("400")
    if operation.get("security"):
        needed.append("401")
        if method not in ("get", "head"):
            needed.append("403")
    if operation.get("requestBody"):
        needed.append("413")
    for status in needed:
        responses.setdefault(status, {"description": GENERIC_ANSWERS[status], "content": _problem_content()})
    responses["default"] = {"description": "Any other error.", "content": _problem_content()}
    operation["responses"] = dict(sorted(responses.items()))


class DescribedAPI(NinjaAPI):
    """A NinjaAPI whose answers are problem+json for every error, whose
    document says so, and whose routes answer unknown methods with a 405
    problem (a read-only token sending a change gets its 403 first)."""

    def __init__(self, **kwargs):
        super().__init__(auth=API_AUTH, parser=BoundedJsonParser(), openapi_url=None, docs_url=None, **kwargs)
        self.add_exception_handler(Exception, _on_exception)
        self.add_exception_handler(HttpError, _on_http_error)
        self.add_exception_handler(ValidationError, _on_validation)

    def get_openapi_schema(self, *, path_prefix=None, path_params=None):
        schema = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        for item in schema["paths"].values():
            for method, operation in item.items():
                _complete(operation, method)
        schema.pop("servers", None)
        return schema

    @functools.cached_property
    def document(self) -> dict:
        return json.loads(json.dumps(self.get_openapi_schema(path_prefix="/api/")))

    def _get_urls(self):
        patterns = super()._get_urls()
        for pattern in patterns:
            if isinstance(pattern, URLPattern) and pattern.name == "api-root":
                pattern.callback = unknown_endpoint  # the API's own address is no endpoint
            elif isinstance(pattern, URLPattern):
                pattern.callback = _problem_view(pattern.callback)
        return patterns


def _problem_view(view: Callable) -> Callable:
    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.method == "HEAD":
            request.method = "GET"  # the same answer; the server sends no body
        response = view(request, *args, **kwargs)
        if isinstance(response, HttpResponseNotAllowed):
            response = method_not_allowed(request, response["Allow"])
        if not response.has_header("Cache-Control"):
            response["Cache-Control"] = DEFAULT_CACHE_CONTROL
        return response

    return wrapper


def method_not_allowed(request: HttpRequest, allow: str) -> HttpResponse:
    """405 with `Allow`; but a read-only token's change is refused as such
    (403), whichever method it uses, so the token's limit reads the same on
    every address."""
    methods = {method.strip() for method in allow.split(",") if method.strip()}
    allowed = ", ".join(sorted(methods | ({"HEAD"} if "GET" in methods else set())))
    if request.method not in SAFE_METHODS and "HTTP_AUTHORIZATION" in request.META:
        try:
            authenticate(request)
        except ReadOnlyToken as exc:
            return problem_response(problem_from_exception(exc))
        except Exception:  # noqa: BLE001  any other credential problem: the method is still wrong
            pass
    return problem_response(
        Problem(405, "method-not-allowed", MSG_METHOD.format(allowed=allowed), headers={"Allow": allowed})
    )


# --- the generic job endpoints ----------------------------------------------------------


def member_job(user, job_id: uuid.UUID, *, with_output: bool = False) -> Job:
    """The job, if the caller is a member of its workspace. Otherwise the
    same 404 as for an id that does not exist: existence is not disclosed."""
    job = (
        jobs_with_live_phase(Job.objects.for_member(user), with_output=with_output).filter(pk=job_id).first()
    )
    if job is None:
        raise not_found()
    return job


def if_match_version(if_match: str | None) -> int | None:
    """The version of `If-Match: "N"` (`*` or none: any version)."""
    text = (if_match or "").strip()
    if not text or text == "*":
        return None
    digits = text.removeprefix("W/").strip('"')
    if not digits.isdigit() or not 1 <= int(digits) <= 2**31 - 1:
        raise Problem(400, "invalid-request", MSG_BAD_IF_MATCH)
    return int(digits)


router = Router(tags=["jobs"])
IF_MATCH = r'^(|\*|(W/)?"[1-9][0-9]{0,8}")$'


@router.post(
    "/jobs/{uuid:id}/cancel", response={200: JobVersion}, url_name="job-cancel", summary="Cancel a job"
)
@answers(
    descriptions={200: "Cancelled."},
    problems={
        404: "No such job in your workspaces.",
        409: "The job can no longer be cancelled, or changed since that version.",
    },
)
def job_cancel_view(
    request: HttpRequest,
    id: uuid.UUID,
    payload: CancelRequest | None = None,
    if_match: str = Header(
        None,
        alias="If-Match",
        pattern=IF_MATCH,
        description=('The version you saw, `"N"`: cancel only if nothing changed.'),
    ),
):
    """A versioned, authorized mutation; 409 when the job cannot be cancelled
    any more (or changed since the version the caller names)."""
    who = caller(request)
    member_job(who.user, id)
    version = if_match_version(if_match)
    if version is None and payload is not None:
        version = payload.version
    job_cancel(job_id=id, expected_version=version, by_label=who.user.get_username())
    job = Job.objects.get(pk=id)
    return {"id": job.pk, "state": job.state, "version": job.version}


# --- outside the operations ---------------------------------------------------------------


# The docs page loads Swagger UI from this site's static files only.
DOCS_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


def meta_router(api: DescribedAPI) -> Router:
    """The document itself and its browsable reference, public."""
    meta = Router(tags=["meta"], auth=None)

    @meta.get(
        "/openapi.json",
        response={200: dict[str, Any]},
        url_name="openapi",
        summary="This description (OpenAPI 3.1)",
    )
    def openapi_json(request: HttpRequest):
        response = JsonResponse(api.document, json_dumps_params={"indent": 1})
        response["Access-Control-Allow-Origin"] = "*"
        return response

    @meta.get("/docs/", response={200: None}, url_name="docs", summary="Browsable API reference (Swagger UI)")
    @answers(media={200: {"text/html": {"schema": {"type": "string"}}}})
    def api_docs(request: HttpRequest):
        response = render(request, "api/docs.html", {"title": api.title})
        response["Content-Security-Policy"] = DOCS_CSP
        return response

    return meta


@api_view
def unknown_endpoint(request: HttpRequest, *args, **kwargs) -> HttpResponse:
    raise Problem(404, "not-found", MSG_NO_ENDPOINT)


unknown_endpoint.csrf_exempt = True
unknown_endpoint.catch_all = True
