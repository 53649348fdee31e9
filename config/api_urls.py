"""Everything under /api/, in the namespace `api`: each app's endpoints, then
a problem+json 404 for any other address (never an HTML page)."""

from django.urls import re_path

from catalog.api import API_DESCRIPTION, API_TITLE
from catalog.api_urls import urlpatterns as catalog_patterns
from jobs.api_urls import urlpatterns as jobs_patterns
from jobs.http import unknown_endpoint
from jobs.openapi import describe_api
from review.api_urls import urlpatterns as review_patterns

describe_api(title=API_TITLE, description=API_DESCRIPTION)

app_name = "api"

urlpatterns = [
    *jobs_patterns,
    *catalog_patterns,
    *review_patterns,
    re_path(r"^", unknown_endpoint),
]
