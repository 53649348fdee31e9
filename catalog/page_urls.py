"""The uploaders' pages under /jobs/ (URL namespace `jobs`)."""

from django.urls import path

from catalog import pages

app_name = "jobs"

urlpatterns = [
    path("", pages.jobs_list, name="list"),
    path("rows", pages.jobs_list_rows, name="rows"),
    path("new", pages.job_new, name="new"),
    path("<uuid:id>/", pages.job_page, name="detail"),
    path("<uuid:id>/live", pages.job_live, name="live"),
    path("<uuid:id>/cancel", pages.job_cancel_page, name="cancel"),
]
