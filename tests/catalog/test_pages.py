"""Catalog pages: members see their own workspaces' suppliers, items with
search, revision history and the diff between two revisions."""

from decimal import Decimal

import pytest
from django.urls import reverse

from catalog.models import CatalogRevision
from tests.review import make_supplier, published_job, sheet_items


def items():
    """Clean items of the standard sheet."""
    out = []
    for item in sheet_items("EUR"):
        item["unit"] = "pcs"
        out.append(item)
    return out


def publish(workspace, supplier, items_):
    job = published_job(workspace, items=items_, supplier=supplier)
    return CatalogRevision.objects.get(job=job)


@pytest.fixture
def supplier(workspace):
    return make_supplier(workspace, "Acme Fasteners")


@pytest.fixture
def revision(workspace, supplier):
    return publish(workspace, supplier, items())


@pytest.fixture
def foreign(other_workspace):
    supplier = make_supplier(other_workspace, "Secret Supplier")
    return publish(other_workspace, supplier, items())


def test_anonymous_user_is_sent_to_sign_in(client, revision):
    for url in (
        reverse("catalog:index"),
        reverse("catalog:supplier", args=[revision.supplier.public_id]),
        reverse("catalog:revision", args=[revision.public_id]),
        reverse("catalog:export_csv", args=[revision.public_id]),
    ):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/")


def test_index_lists_the_members_suppliers_with_their_current_revision(client, member, revision, foreign):
    client.force_login(member)
    response = client.get(reverse("catalog:index"))
    suppliers = list(response.context["suppliers"])
    assert [(s.name, s.current_revision_id) for s in suppliers] == [("Acme Fasteners", revision.pk)]
    assert "Secret Supplier" not in response.content.decode()


def test_supplier_page_shows_the_current_revisions_items(client, member, workspace, supplier, revision):
    newer = items()
    newer[0]["unit_price"] = "13.00"
    current = publish(workspace, supplier, newer)
    client.force_login(member)
    response = client.get(reverse("catalog:supplier", args=[supplier.public_id]))
    assert response.context["revision"].pk == current.pk
    shown = {i.sku: i.unit_price for i in response.context["items"]}
    assert shown == {"A-1": Decimal("13"), "A-2": Decimal("0.4"), "A-3": Decimal("0.9")}
    assert [r.pk for r in response.context["revisions"]] == [current.pk, revision.pk]


def test_search_filters_items_by_sku_or_description(client, member, supplier, revision):
    client.force_login(member)
    url = reverse("catalog:supplier", args=[supplier.public_id])
    assert [i.sku for i in client.get(url, {"q": "washer"}).context["items"]] == ["A-2"]
    assert [i.sku for i in client.get(url, {"q": "a-3"}).context["items"]] == ["A-3"]
    assert list(client.get(url, {"q": "nothing like it"}).context["items"]) == []


def test_revision_page_searches_its_items(client, member, revision):
    client.force_login(member)
    response = client.get(reverse("catalog:revision", args=[revision.public_id]), {"q": "bolt"})
    assert [i.sku for i in response.context["items"]] == ["A-1"]


def test_another_workspaces_catalog_is_404(client, member, foreign):
    client.force_login(member)
    for url in (
        reverse("catalog:supplier", args=[foreign.supplier.public_id]),
        reverse("catalog:revision", args=[foreign.public_id]),
        reverse("catalog:export_csv", args=[foreign.public_id]),
        reverse("catalog:export_xlsx", args=[foreign.public_id]),
    ):
        assert client.get(url).status_code == 404, url


def test_diff_with_another_workspaces_revision_is_404(client, member, revision, foreign):
    client.force_login(member)
    response = client.get(reverse("catalog:diff"), {"old": foreign.public_id, "new": revision.public_id})
    assert response.status_code == 404


def test_diff_shows_added_removed_and_changed_skus_with_old_and_new_price(
    client, member, workspace, supplier, revision
):
    newer = items()
    newer[0]["unit_price"] = "13.00"
    del newer[1]
    newer.append(
        {
            **newer[0],
            "sku": "A-4",
            "description": "Spring washer",
            "unit_price": "0.55",
            "source": {"sheet": "Prices", "row": 5},
        }
    )
    current = publish(workspace, supplier, newer)
    client.force_login(member)
    response = client.get(reverse("catalog:diff"), {"old": revision.public_id, "new": current.public_id})
    diff = response.context["diff"]
    assert [i["sku"] for i in diff.added] == ["A-4"]
    assert [i["sku"] for i in diff.removed] == ["A-2"]
    assert [(c.sku, c.old["unit_price"], c.new["unit_price"], c.fields) for c in diff.changed] == [
        ("A-1", Decimal("12.5"), Decimal("13"), ("unit_price",))
    ]
    assert diff.unchanged == 1
    html = response.content.decode()
    assert "12.50 EUR" in html and "13.00 EUR" in html


def test_diff_needs_two_revisions(client, member, revision):
    client.force_login(member)
    assert client.get(reverse("catalog:diff"), {"old": revision.public_id}).status_code == 404


def test_pages_address_suppliers_and_revisions_by_public_id(client, member, supplier, revision):
    client.force_login(member)
    html = client.get(reverse("catalog:supplier", args=[supplier.public_id])).content.decode()
    assert f"/catalog/revisions/{revision.public_id}/" in html
    assert f"/catalog/revisions/{revision.pk}/" not in html


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("/catalog/suppliers/{supplier.pk}/", "/catalog/suppliers/{supplier.public_id}/"),
        ("/catalog/revisions/{revision.pk}/", "/catalog/revisions/{revision.public_id}/"),
        ("/catalog/revisions/{revision.pk}/export.csv", "/catalog/revisions/{revision.public_id}/export.csv"),
        (
            "/catalog/revisions/{revision.pk}/export.xlsx",
            "/catalog/revisions/{revision.public_id}/export.xlsx",
        ),
    ],
)
def test_old_integer_addresses_redirect_for_good(client, member, supplier, revision, old, new):
    client.force_login(member)
    response = client.get(old.format(supplier=supplier, revision=revision))
    assert response.status_code == 301
    assert response["Location"] == new.format(supplier=supplier, revision=revision)


def test_old_integer_diff_address_redirects(client, member, workspace, supplier, revision):
    current = publish(workspace, supplier, items()[:1])
    client.force_login(member)
    response = client.get(reverse("catalog:diff"), {"old": revision.pk, "new": current.pk})
    assert response.status_code == 301
    assert response["Location"] == (
        f"{reverse('catalog:diff')}?old={revision.public_id}&new={current.public_id}"
    )


def test_old_integer_address_of_another_workspace_is_404_not_a_redirect(client, member, foreign):
    client.force_login(member)
    for url in (f"/catalog/suppliers/{foreign.supplier.pk}/", f"/catalog/revisions/{foreign.pk}/"):
        assert client.get(url).status_code == 404


def test_revision_page_marks_values_a_reviewer_set_and_links_its_job_and_review(client, workspace, reviewer):
    from tests.review import reviewed_revision

    revision = reviewed_revision(workspace, reviewer)
    client.force_login(reviewer)
    html = client.get(reverse("catalog:revision", args=[revision.public_id])).content.decode()
    assert html.count('class="set-mark"') == 3 + 1 + 1  # 3 currencies, 1 unit, the legend
    assert "set by rey" in html
    assert f'href="{reverse("jobs:detail", args=[revision.job_id])}"' in html
    assert f'href="{reverse("review:detail", args=[revision.job_id])}#decisions"' in html
