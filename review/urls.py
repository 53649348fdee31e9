from django.urls import path

from review import views

app_name = "review"

urlpatterns = [
    path("", views.queue, name="queue"),
    path("<uuid:job_id>/", views.detail, name="detail"),
    path("<uuid:job_id>/save/", views.save, name="save"),
    path("<uuid:job_id>/approve/", views.approve, name="approve"),
    path("<uuid:job_id>/reject/", views.reject, name="reject"),
]
