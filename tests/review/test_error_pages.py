"""The 500 page keeps the navigation and says what to do, without a database."""

from django.test import RequestFactory
from django.views.defaults import server_error


def test_the_500_page_keeps_the_navigation_and_says_what_to_do():
    response = server_error(RequestFactory().get("/jobs/"))
    html = response.content.decode()
    assert response.status_code == 500
    assert '<nav aria-label="Main">' in html and 'href="/review/"' in html
    assert "Nothing you sent was lost" in html
