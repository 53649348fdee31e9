from django.urls import path

from review import api, mapping_api

urlpatterns = [
    path("jobs/<uuid:id>/approve", api.job_approve_view, name="job-approve"),
    path("jobs/<uuid:id>/reject", api.job_reject_view, name="job-reject"),
    path("jobs/<uuid:id>/mapping", mapping_api.job_mapping, name="job-mapping"),
]
