"""The generic job endpoints; `config/api_urls.py` puts them under /api/."""

from django.urls import path

from jobs import http, openapi

urlpatterns = [
    path("jobs/<uuid:id>/cancel", http.job_cancel_view, name="job-cancel"),
    path("openapi.json", openapi.openapi_json, name="openapi"),
    path("docs/", openapi.api_docs, name="docs"),
]
