from django.urls import path

from jobs import ops

app_name = "ops"

urlpatterns = [
    path("ops/", ops.dashboard, name="dashboard"),
    path("metrics", ops.metrics, name="metrics"),
]
