"""The OpenAPI 3.1 description of the HTTP API, generated from the code.

Each API view declares its operations with `@operation(...)` beside it: the
method, a summary, and the pydantic models of its query, body and answers.
`build_document()` walks the URLconf: every route under `/api/` whose view
declares operations becomes a path, its converters become the path
parameters. Nothing is written twice, so the description cannot drift from
the routes; the test suite fails when a route under `/api/` declares nothing
and validates every API answer it receives against this document.

Errors are problem+json everywhere: every operation also has a `default`
answer of that type, so a status not listed is still described.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.converters import IntConverter, UUIDConverter
from django.views.decorators.http import require_safe
from pydantic import BaseModel, ConfigDict, ValidationError

from jobs.problems import Problem

API_PREFIX = "api/"
OPENAPI_VERSION = "3.1.0"
JSON = "application/json"
PROBLEM_JSON = "application/problem+json"
REF = "#/components/schemas/{model}"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS", "TRACE")
# The docs page loads Swagger UI from this site's static files only.
DOCS_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")


class ProblemBody(BaseModel):
    """An error (RFC 9457). Clients branch on `type`; more members may follow."""

    model_config = ConfigDict(extra="allow", title="Problem")

    type: str
    title: str
    status: int
    detail: str | None = None


@dataclass(frozen=True)
class Body:
    """One representation of a request or an answer."""

    content_type: str
    schema: type[BaseModel] | dict[str, Any] | None = None


@dataclass(frozen=True)
class Answer:
    description: str
    bodies: tuple[Body, ...] = ()
    headers: dict[str, str] = field(default_factory=dict)  # name -> description


def json_answer(model: type[BaseModel], description: str, **headers: str) -> Answer:
    return Answer(description, (Body(JSON, model),), _header_names(headers))


def problem(description: str) -> Answer:
    return Answer(description, (Body(PROBLEM_JSON, ProblemBody),))


def empty(description: str, **headers: str) -> Answer:
    return Answer(description, (), _header_names(headers))


def _header_names(headers: dict[str, str]) -> dict[str, str]:
    """Python keywords to header names: `Idempotent_Replayed` -> `Idempotent-Replayed`."""
    return {name.replace("_", "-"): text for name, text in headers.items()}


@dataclass(frozen=True)
class Operation:
    method: str
    summary: str
    answers: dict[int, Answer]
    description: str = ""
    tags: tuple[str, ...] = ()
    query: type[BaseModel] | None = None
    headers: dict[str, tuple[str, bool]] = field(default_factory=dict)  # name -> (text, required)
    body: tuple[Body, ...] = ()
    body_required: bool = True
    public: bool = False  # no credentials needed


def operation(method: str, *, summary: str, answers: dict[int, Answer], description: str = "",
              tags: tuple[str, ...] = (), query: type[BaseModel] | None = None,
              headers: dict[str, tuple[str, bool]] | None = None, body: tuple[Body, ...] = (),
              body_required: bool = True, public: bool = False) -> Callable:
    """Declare one operation of the view below. Stack one per method."""
    declared = Operation(method=method.upper(), summary=summary, answers=answers,
                         description=description, tags=tags, query=query, headers=headers or {},
                         body=body, body_required=body_required, public=public)

    def decorate(view: Callable) -> Callable:
        # A new list (not an append): wrappers made by functools.wraps share
        # the inner function's attribute values.
        view.openapi_operations = [*getattr(view, "openapi_operations", []), declared]
        return view

    return decorate


def parse_query(request: HttpRequest, model: type[BaseModel]) -> BaseModel:
    """The query string validated by the same model the document shows, or
    a 400 problem naming each bad parameter."""
    data: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if name not in request.GET:
            continue
        is_list = "list" in str(info.annotation)
        data[name] = request.GET.getlist(name) if is_list else request.GET.get(name)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = [{"parameter": ".".join(str(p) for p in error["loc"]), "message": error["msg"]}
                  for error in exc.errors()]
        detail = "; ".join(f"`{e['parameter']}`: {e['message']}" for e in errors)
        raise Problem(400, "invalid-request", detail, errors=errors) from None


def catch_all(view: Callable) -> Callable:
    """Mark a view that answers for addresses that are not endpoints."""
    view.openapi_catch_all = True
    return view


# --- the URLconf -----------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    path: str  # "/api/jobs/{id}"
    converters: dict[str, object]
    view: Callable


def _walk(patterns, prefix: str, converters: dict) -> Iterator[Route]:
    for entry in patterns:
        route = str(entry.pattern)
        found = {**converters, **getattr(entry.pattern, "converters", {})}
        if isinstance(entry, URLResolver):
            yield from _walk(entry.url_patterns, prefix + route, found)
        elif isinstance(entry, URLPattern):
            yield Route(path=prefix + route, converters=found, view=entry.callback)


def api_routes() -> list[Route]:
    """Every route under /api/, in URLconf order (a regex catch-all keeps its regex)."""
    routes = []
    for route in _walk(get_resolver().url_patterns, "", {}):
        if route.path.startswith(API_PREFIX):
            path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route.path)
            routes.append(Route(path=path, converters=route.converters, view=route.view))
    return routes


def declared_operations(view: Callable) -> list[Operation]:
    return list(getattr(view, "openapi_operations", []))


def is_catch_all(view: Callable) -> bool:
    return bool(getattr(view, "openapi_catch_all", False))


# --- the document ----------------------------------------------------------------


class _Schemas:
    """Collects the JSON Schemas of pydantic models as shared components."""

    def __init__(self):
        self.components: dict[str, dict] = {}

    def ref(self, schema: type[BaseModel] | dict | None, *, mode: str) -> dict:
        if schema is None:
            return {}
        if isinstance(schema, dict):
            return schema
        generated = schema.model_json_schema(ref_template=REF, mode=mode)
        for name, definition in generated.pop("$defs", {}).items():
            self.components.setdefault(name, definition)
        name = generated.get("title", schema.__name__)
        self.components.setdefault(name, generated)
        return {"$ref": REF.format(model=name)}


def _converter_schema(converter: object) -> dict:
    if isinstance(converter, UUIDConverter):
        return {"type": "string", "format": "uuid"}
    if isinstance(converter, IntConverter):
        return {"type": "integer", "minimum": 0}
    return {"type": "string"}


def _query_parameters(model: type[BaseModel]) -> list[dict]:
    schema = model.model_json_schema(mode="validation")
    required = set(schema.get("required", []))
    parameters = []
    for name, prop in schema.get("properties", {}).items():
        description = prop.pop("description", "")
        prop.pop("title", None)
        parameter = {"name": name, "in": "query", "required": name in required, "schema": prop}
        if description:
            parameter["description"] = description
        parameters.append(parameter)
    return parameters


def _content(bodies: tuple[Body, ...], schemas: _Schemas, *, mode: str) -> dict:
    return {body.content_type: {"schema": schemas.ref(body.schema, mode=mode)} for body in bodies}


def _operation_object(route: Route, op: Operation, schemas: _Schemas) -> dict:
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": _converter_schema(converter)}
        for name, converter in route.converters.items()
    ]
    if op.query is not None:
        parameters += _query_parameters(op.query)
    parameters += [{"name": name, "in": "header", "required": required, "description": text,
                    "schema": {"type": "string"}}
                   for name, (text, required) in op.headers.items()]
    answers = dict(op.answers)
    if not op.public:
        answers.setdefault(401, problem("No credentials, or a token that is unknown or revoked."))
    if op.method not in SAFE_METHODS:
        answers.setdefault(403, problem(
            "Not allowed: a read-only token, a failed CSRF check, or a missing role."))
    responses = {}
    for status, answer in sorted(answers.items()):
        response = {"description": answer.description}
        if answer.bodies:
            response["content"] = _content(answer.bodies, schemas, mode="serialization")
        if answer.headers:
            response["headers"] = {name: {"description": text, "schema": {"type": "string"}}
                                   for name, text in answer.headers.items()}
        responses[str(status)] = response
    responses["default"] = {"description": "Any other error.",
                            "content": _content((Body(PROBLEM_JSON, ProblemBody),), schemas,
                                                mode="serialization")}
    view_name = getattr(route.view, "__name__", "view")
    document = {
        "operationId": f"{view_name}_{op.method.lower()}",
        "summary": op.summary,
        "tags": list(op.tags),
        "parameters": parameters,
        "responses": responses,
    }
    if op.description:
        document["description"] = op.description
    if op.body:
        document["requestBody"] = {"required": op.body_required,
                                   "content": _content(op.body, schemas, mode="validation")}
    if op.public:
        document["security"] = []
    return document


# What the document says of the API as a whole: the product describes
# itself (config/api_urls.py), this machinery does not know it.
_INFO = {"title": "API", "version": "1", "description": ""}


def describe_api(*, title: str, description: str, version: str = "1") -> None:
    _INFO.update(title=title, description=description, version=version)
    cached_document.cache_clear()


def build_document() -> dict:
    """The OpenAPI 3.1 document of every declared operation under /api/."""
    schemas = _Schemas()
    paths: dict[str, dict] = {}
    for route in api_routes():
        for op in declared_operations(route.view):
            paths.setdefault(route.path, {})[op.method.lower()] = _operation_object(route, op, schemas)
    return {
        "openapi": OPENAPI_VERSION,
        "info": dict(_INFO),
        "paths": paths,
        "components": {
            "schemas": dict(sorted(schemas.components.items())),
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "session": {"type": "apiKey", "in": "cookie", "name": settings.SESSION_COOKIE_NAME},
            },
        },
        "security": [{"bearer": []}, {"session": []}],
    }


@functools.cache
def cached_document() -> dict:
    return build_document()


# --- the views -------------------------------------------------------------------


class OpenApiDocument(BaseModel):
    model_config = ConfigDict(extra="allow", title="OpenApiDocument")

    openapi: str
    info: dict
    paths: dict


@operation("GET", summary="This description (OpenAPI 3.1)", tags=("meta",), public=True,
           answers={200: json_answer(OpenApiDocument, "The OpenAPI document.")})
@require_safe
def openapi_json(request: HttpRequest) -> HttpResponse:
    response = JsonResponse(cached_document(), json_dumps_params={"indent": 1})
    response["Access-Control-Allow-Origin"] = "*"
    return response


@operation("GET", summary="Browsable API reference (Swagger UI)", tags=("meta",), public=True,
           answers={200: Answer("An HTML page.", (Body("text/html", {"type": "string"}),))})
@require_safe
def api_docs(request: HttpRequest) -> HttpResponse:
    response = render(request, "api/docs.html", {"title": _INFO["title"]})
    response["Content-Security-Policy"] = DOCS_CSP
    return response
