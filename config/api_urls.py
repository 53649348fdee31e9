"""Everything under /api/: one django-ninja API (namespace `api`) made of
each app's router, whose typed operations are the parsers and the OpenAPI
document, then a problem+json 404 for any other address (never an HTML page)."""

from django.urls import re_path

from catalog.api import API_DESCRIPTION, API_TITLE
from catalog.api import router as uploads
from catalog.read_api import router as catalog
from jobs.http import DescribedAPI, meta_router, unknown_endpoint
from jobs.http import router as jobs
from review.api import router as review
from review.mapping_api import router as mapping

api = DescribedAPI(title=API_TITLE, version="1", description=API_DESCRIPTION, urls_namespace="api")
api.add_router("", uploads)
api.add_router("", jobs)
api.add_router("", review)
api.add_router("", mapping)
api.add_router("", catalog)
api.add_router("", meta_router(api))

urlpatterns = [re_path(r"^", unknown_endpoint)]
