from django.urls import path

from review import api

urlpatterns = [
    path("jobs/<uuid:id>/approve", api.job_approve_view, name="job-approve"),
    path("jobs/<uuid:id>/reject", api.job_reject_view, name="job-reject"),
]
