"""The mapping page's matrix form: a proposed matrix is shown ready to
confirm, the form applies a matrix mapping, and an impossible one comes
back with its problems in words."""

import re

import pytest

from jobs.models import State
from tests.catalog import matrixgen
from tests.review.test_mapping_api import admit, run_until_idle
from tests.review.test_mapping_views import signed_in

FORM = {
    "sheet-0-name": "Sheet1",
    "sheet-0-read": "1",
    "sheet-0-mode": "matrix",
    "sheet-0-matrix-row_labels": "A",
    "sheet-0-matrix-column_header_rows": "2",
    "sheet-0-matrix-body": "B3:F6",
    "sheet-0-matrix-dimension_unit": "cm",
    "sheet-0-matrix-product": "Roller blind",
    "currency": "EUR",
}


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def matrix_job(workspace):
    job = admit(workspace, matrixgen.width_by_height().data, name="blinds.csv")
    run_until_idle()
    job.refresh_from_db()
    return job


def test_a_proposed_matrix_is_shown_in_the_matrix_form_with_its_cell_counts(client, workspace, reviewer):
    job = matrix_job(workspace)
    page = signed_in(client, "rey").get(f"/review/{job.pk}/mapping/").content.decode()
    assert 'name="sheet-0-mode" value="matrix" class="sheet-mode" checked' in page
    assert re.search(r'name="sheet-0-matrix-body"[^>]*value="B3:F6"', page)
    assert "19 priced cells became items; 1 empty or not offered skipped" in page


def test_the_form_applies_a_matrix_mapping(client, workspace, reviewer):
    job = matrix_job(workspace)
    response = signed_in(client, "rey").post(f"/review/{job.pk}/mapping/", {**FORM, "version": job.version})
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.state == State.QUEUED
    (entry,) = job.payload["mapping"]["sheets"]
    assert entry["matrix"] == {
        "row_labels": ["A"],
        "column_header_rows": [2],
        "body": "B3:F",
        "dimension_unit": "cm",
        "product": "Roller blind",
    }
    assert entry["header_row"] == 2


@pytest.mark.parametrize(
    "change, message",
    [
        ({"sheet-0-matrix-column_header_rows": "two"}, "are not row numbers"),
        ({"sheet-0-matrix-column_header_rows": "3"}, "column header row 3 is inside the body"),
        ({"sheet-0-matrix-body": "B3:Z6"}, "reaches outside the sheet"),
        ({"sheet-0-matrix-row_labels": ""}, "`row_labels` must list"),
    ],
)
def test_an_impossible_matrix_comes_back_with_its_problems_and_the_typed_values(
    client, workspace, reviewer, change, message
):
    job = matrix_job(workspace)
    response = signed_in(client, "rey").post(
        f"/review/{job.pk}/mapping/", {**FORM, **change, "version": job.version}
    )
    assert response.status_code == 422
    page = response.content.decode()
    assert message in page
    assert 'value="matrix" class="sheet-mode" checked' in page and "Roller blind" in page
    job.refresh_from_db()
    assert job.state == State.AWAITING_REVIEW
