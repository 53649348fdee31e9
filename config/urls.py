from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path("", RedirectView.as_view(url="/jobs/", permanent=False)),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("review.api_urls")),
    path("api/", include("jobs.api_urls")),
    path("jobs/", include("jobs.page_urls")),
    path("review/", include("review.urls")),
    path("catalog/", include("catalog.urls")),
    path("", include("jobs.ops_urls")),
]
