"""The OpenAPI document: served, valid OpenAPI 3.1, generated from the
URLconf so every route under /api/ is described (the drift guard), and the
contract's status codes are in it. That every API answer the suite receives
matches it is checked for every test by tests/openapi_check.py."""

import pytest
from openapi_spec_validator import validate

from jobs.openapi import api_routes, build_document, declared_operations, is_catch_all

CONTRACT = {
    ("post", "/api/jobs"): {"202", "400", "401", "403", "411", "413", "422"},
    ("get", "/api/jobs"): {"200", "400", "401"},
    ("get", "/api/jobs/{id}"): {"200", "401", "404"},
    ("get", "/api/jobs/{id}/items"): {"200", "401", "404"},
    ("post", "/api/jobs/{id}/cancel"): {"200", "401", "403", "404", "409"},
    ("post", "/api/jobs/{id}/approve"): {"200", "400", "401", "403", "404", "409", "422"},
    ("post", "/api/jobs/{id}/reject"): {"200", "400", "401", "403", "404", "409"},
    ("post", "/api/jobs/{id}/mapping"): {"202", "400", "401", "403", "404", "409", "422"},
    ("get", "/api/suppliers"): {"200", "401"},
    ("get", "/api/suppliers/{id}/items"): {"200", "304", "401", "404"},
    ("get", "/api/suppliers/{id}/changes"): {"200", "304", "401", "404"},
    ("get", "/api/revisions/{id}"): {"200", "304", "401", "404", "406"},
    ("get", "/api/revisions/{id}/items"): {"200", "304", "401", "404", "406"},
}


@pytest.fixture
def document(client):
    response = client.get("/api/openapi.json")
    assert response.status_code == 200
    return response.json()


def test_the_document_is_valid_openapi_3_1(document):
    assert document["openapi"].startswith("3.1")
    validate(document)


def test_every_route_under_api_is_described():
    """The drift guard: a new route under /api/ without `@operation` fails here."""
    undescribed = [route.path for route in api_routes()
                   if not declared_operations(route.view) and not is_catch_all(route.view)]
    assert undescribed == []


def test_every_described_route_is_in_the_served_document(document):
    expected = {(op.method.lower(), route.path) for route in api_routes()
                for op in declared_operations(route.view)}
    served = {(method, path) for path, item in document["paths"].items() for method in item}
    assert served == expected


@pytest.mark.parametrize(("operation", "statuses"), CONTRACT.items(), ids=lambda v: str(v))
def test_the_contracts_status_codes_are_described(document, operation, statuses):
    method, path = operation
    assert statuses <= set(document["paths"][path][method]["responses"])


def test_errors_are_described_as_problem_json(document):
    for item in document["paths"].values():
        for op in item.values():
            assert "application/problem+json" in op["responses"]["default"]["content"]


def test_mutations_name_the_read_only_refusal(document):
    for item in document["paths"].values():
        for method, op in item.items():
            if method in ("post", "put", "patch", "delete"):
                assert "403" in op["responses"]


def test_the_upload_declares_its_idempotency_key(document):
    parameters = document["paths"]["/api/jobs"]["post"]["parameters"]
    key = next(p for p in parameters if p["name"] == "Idempotency-Key")
    assert (key["in"], key["required"]) == ("header", True)


def test_the_document_is_public(client):
    assert client.get("/api/openapi.json").status_code == 200


def test_the_reference_page_loads_only_this_sites_files_under_a_strict_csp(client):
    response = client.get("/api/docs/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert "unsafe-inline" not in response["Content-Security-Policy"]
    assert "<script>" not in html and "http://" not in html and "https://" not in html
    assert "/static/vendor/swagger-ui/swagger-ui-bundle.js" in html
    assert "<title>Pricesheet API reference</title>" in html  # the title the product gives
