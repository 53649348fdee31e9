"""Cross-cutting response headers."""

from django.utils.cache import add_never_cache_headers


def no_store_when_private(get_response):
    """`Cache-Control: no-store` on everything a signed-in user or an API
    client sees (pages, API answers, exports): shared machines and proxies
    must not keep a workspace's data. Static files never reach here
    (WhiteNoise answers them first)."""

    def middleware(request):
        response = get_response(request)
        private = (request.path.startswith("/api/")
                   or "HTTP_AUTHORIZATION" in request.META
                   or getattr(getattr(request, "user", None), "is_authenticated", False))
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
