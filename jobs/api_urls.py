from django.urls import path, re_path

from jobs import api, openapi

app_name = "api"

urlpatterns = [
    path("jobs", api.jobs_collection, name="jobs"),
    path("jobs/<uuid:id>", api.job_detail, name="job"),
    path("jobs/<uuid:id>/items", api.job_items_view, name="job-items"),
    path("jobs/<uuid:id>/cancel", api.job_cancel_view, name="job-cancel"),
    path("openapi.json", openapi.openapi_json, name="openapi"),
    path("docs/", openapi.api_docs, name="docs"),
    # Anything else under /api/ is a problem+json 404, not an HTML page.
    re_path(r"^", api.unknown_endpoint),
]
