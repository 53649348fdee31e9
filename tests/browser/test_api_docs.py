"""The API reference page renders the OpenAPI document in real Chromium,
from this site's static files, under its Content-Security-Policy."""

import pytest


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_api_reference_renders_every_path_under_its_csp(live_server, new_context, screenshot_path):
    page = new_context().new_page()
    refused, outside = [], []
    page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(live_server.url) else None)
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".opblock-summary-path", timeout=20000)
    shown = set(page.locator(".opblock-summary-path").all_inner_texts())
    page.screenshot(path=screenshot_path("api-docs.png"))
    assert {"/api/jobs", "/api/suppliers/{id}/changes", "/api/revisions/{id}/items"} <= {
        text.replace("\u200b", "") for text in shown
    }
    assert refused == []
    assert [url for url in outside if not url.startswith("data:")] == []
