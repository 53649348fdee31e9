from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView

from config.api_urls import api

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="jobs:list", permanent=False)),
    path("admin/", admin.site.urls),
    # Sign-in and sign-out only: no self-service password reset (there is no
    # mail to send it by); administrators set passwords (admin, addmember).
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/", api.urls),
    path("api/", include("config.api_urls")),
    path("jobs/", include("catalog.page_urls")),
    path("review/", include("review.urls")),
    path("catalog/", include("catalog.urls")),
    path("", include("jobs.ops_urls")),
]
