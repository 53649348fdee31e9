from django.urls import path

from review import api, mapping_views, views

app_name = "review"

urlpatterns = [
    path("", views.queue, name="queue"),
    path("<uuid:job_id>/", views.detail, name="detail"),
    path("<uuid:job_id>/next/", views.next_job, name="next"),
    path("<uuid:job_id>/reject/", views.reject, name="reject"),
    path("<uuid:job_id>/mapping/", mapping_views.mapping, name="mapping"),
    # JSON for the page's grid (session and CSRF, like the API).
    path("<uuid:id>/items", api.grid_items_view, name="items"),
    path("<uuid:id>/source", api.grid_source_view, name="source"),
    path("<uuid:id>/save/", api.grid_save_view, name="save"),
    path("<uuid:id>/preview", api.grid_preview_view, name="preview"),
    path("<uuid:id>/matches", api.grid_matches_view, name="matches"),
    path("<uuid:id>/check", api.grid_check_view, name="check"),
]
