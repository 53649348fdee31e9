"""The column mapping page: who may see it, what it shows, and how the form
applies a mapping, refuses an impossible one and refuses a stale one."""

import pytest

from jobs.models import Job, State
from tests.review.test_mapping_api import MAPPING, post_mapping, bearer, refused_job

FORM = {
    "sheet-0-name": "Sheet1",
    "sheet-0-read": "1",
    "sheet-0-header_row": "1",
    "sheet-0-col-A": "description",
    "sheet-0-col-B": "unit_price",
    "sheet-0-col-C": "other",
    "sheet-0-col-D": "other",
    "currency": "EUR",
}


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def signed_in(client, username):
    from django.contrib.auth import get_user_model

    client.force_login(get_user_model().objects.get(username=username))
    return client


def test_the_page_shows_every_column_above_the_source_cells(client, workspace, reviewer):
    job = refused_job(workspace)
    page = signed_in(client, "rey").get(f"/review/{job.pk}/mapping/").content.decode()
    for letter in "ABCD":
        assert f'name="sheet-0-col-{letter}"' in page
    assert "0-1 kg" in page and "Zone 3" in page
    assert "looks like a rate card" in page
    assert f'name="version" value="{job.version}"' in page


def test_the_job_page_links_a_refused_sheet_to_the_mapping_page(client, workspace, reviewer):
    job = refused_job(workspace)
    page = signed_in(client, "rey").get(f"/jobs/{job.pk}/").content.decode()
    assert f'href="/review/{job.pk}/mapping/"' in page


def test_the_job_page_offers_the_mapping_link_only_to_reviewers(client, workspace, reviewer, member):
    job = refused_job(workspace)
    page = signed_in(client, "mia").get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="mapping-card"' in page and f'href="/review/{job.pk}/mapping/"' not in page


def test_a_member_without_the_role_gets_403_and_an_outsider_404(
    client, workspace, reviewer, member, outsider
):
    job = refused_job(workspace)
    assert signed_in(client, "mia").get(f"/review/{job.pk}/mapping/").status_code == 403
    client.logout()
    assert signed_in(client, "olaf").get(f"/review/{job.pk}/mapping/").status_code == 404


def test_the_form_applies_the_mapping_and_goes_to_the_job_page(client, workspace, reviewer):
    job = refused_job(workspace)
    response = signed_in(client, "rey").post(f"/review/{job.pk}/mapping/", {**FORM, "version": job.version})
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    job.refresh_from_db()
    assert job.state == State.QUEUED
    assert job.payload["mapping"]["sheets"] == MAPPING["sheets"]
    assert job.payload["mapping"]["currency"] == "EUR"


def test_an_impossible_form_is_shown_again_with_the_reasons(client, workspace, reviewer):
    job = refused_job(workspace)
    form = {**FORM, "sheet-0-col-B": "other", "version": job.version}
    response = signed_in(client, "rey").post(f"/review/{job.pk}/mapping/", form)
    assert response.status_code == 422
    assert "name the unit price column" in response.content.decode()
    assert Job.objects.get(pk=job.pk).state == State.NEEDS_ATTENTION


def test_two_columns_with_one_role_are_refused_by_name(client, workspace, reviewer):
    job = refused_job(workspace)
    form = {**FORM, "sheet-0-col-C": "unit_price", "version": job.version}
    response = signed_in(client, "rey").post(f"/review/{job.pk}/mapping/", form)
    assert response.status_code == 422
    assert "columns B and C are both marked Unit price" in response.content.decode()


def test_a_stale_page_changes_nothing_and_says_who_changed_what(client, workspace, reviewer):
    job = refused_job(workspace)
    assert post_mapping(bearer(reviewer), job).status_code == 202  # someone else, first
    client = signed_in(client, "rey")
    response = client.post(f"/review/{job.pk}/mapping/", {**FORM, "version": job.version}, follow=True)
    text = response.content.decode()
    assert "Nothing was changed" in text and "column mapping applied by rey" in text
    assert Job.objects.get(pk=job.pk).version == job.version + 1
