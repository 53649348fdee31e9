"""The review grid suggests units from the whole UN/CEFACT table."""

from django.urls import reverse

from catalog.units import UNITS
from tests.review import flagged_job


def test_unit_suggestions_list_every_unit_with_its_code(client, workspace, reviewer):
    job = flagged_job(workspace)
    client.force_login(reviewer)

    page = client.get(reverse("review:detail", args=[job.pk])).content.decode()

    datalist = page[page.index('<datalist id="unit-list">') :]
    datalist = datalist[: datalist.index("</datalist>")]
    assert datalist.count("<option ") == len(UNITS)
    assert '<option value="jar" label="jar (JR)">' in datalist
    assert '<option value="kg" label="kilogram (KGM)">' in datalist
