"""The uploaders' endpoints; `config/api_urls.py` puts them under /api/."""

from django.urls import path

from catalog import api

urlpatterns = [
    path("jobs", api.jobs_collection, name="jobs"),
    path("jobs/<uuid:id>", api.job_detail, name="job"),
    path("jobs/<uuid:id>/items", api.job_items_view, name="job-items"),
]
