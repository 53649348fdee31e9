"""Cross-cutting response headers."""

from django.conf import settings
from django.utils.cache import add_never_cache_headers

from catalog.api import UPLOAD_PATH, bound_upload
from jobs.problems import Problem, problem_response

MSG_BODY_TOO_LARGE = "The request body is larger than {limit} bytes."


def bounded_api_bodies(get_response):
    """API request bodies are bounded before a byte of them is read: an
    upload by its declared length (411 without one, 413 past
    `UPLOAD_MAX_BYTES`) and a byte count while it streams in; any other
    body by `API_JSON_MAX_BYTES` (413)."""

    def middleware(request):
        if request.path.startswith("/api/") and request.method not in ("GET", "HEAD", "OPTIONS"):
            try:
                if request.path == UPLOAD_PATH and request.method == "POST":
                    bound_upload(request)
                else:
                    _refuse_large_body(request)
            except Problem as problem:
                return problem_response(problem)
        return get_response(request)

    return middleware


def _refuse_large_body(request) -> None:
    limit = settings.API_JSON_MAX_BYTES
    raw = request.META.get("CONTENT_LENGTH") or "0"
    if not raw.isdigit():
        raise Problem(400, "invalid-request", "Content-Length is not a number.")
    if int(raw) > limit:
        raise Problem(413, "body-too-large", MSG_BODY_TOO_LARGE.format(limit=limit), limit_bytes=limit)


def no_store_when_private(get_response):
    """`Cache-Control: no-store` on everything a signed-in user or an API
    client sees (pages, API answers, exports): shared machines and proxies
    must not keep a workspace's data. Static files never reach here
    (WhiteNoise answers them first)."""

    def middleware(request):
        response = get_response(request)
        private = (
            request.path.startswith("/api/")
            or "HTTP_AUTHORIZATION" in request.META
            or getattr(getattr(request, "user", None), "is_authenticated", False)
        )
        if private and "no-store" not in response.get("Cache-Control", ""):
            add_never_cache_headers(response)
        return response

    return middleware


def lockout_response(request, original_response, credentials):
    """django-axes' answer to a locked-out sign-in: 429 and one message,
    the same whether the username exists or not."""
    from django.conf import settings
    from django.shortcuts import render

    minutes = round(settings.AXES_COOLOFF_TIME.total_seconds() / 60)
    return render(request, "registration/locked_out.html", {"lockout_minutes": minutes}, status=429)
