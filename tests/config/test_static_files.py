"""Static files as the service serves them: under names holding their
content's hash, with a gzip copy beside each, sent compressed and cached
for ever."""

from django.core.management import call_command
from django.templatetags.static import static
from django.test import Client, override_settings

from config import settings as service_settings


def test_collected_static_files_are_named_by_hash_compressed_and_cached_for_ever(tmp_path, db):
    with override_settings(STATIC_ROOT=tmp_path, STORAGES=service_settings.STORAGES):
        call_command("collectstatic", "--noinput", verbosity=0)
        url = static("js/review.js")
        response = Client().get(url, HTTP_ACCEPT_ENCODING="gzip")
    name = url.rsplit("/", 1)[1]
    assert name.startswith("review.") and name.endswith(".js") and name != "review.js"
    assert (tmp_path / "js" / name).exists()
    assert (tmp_path / "js" / (name + ".gz")).exists()
    assert response.status_code == 200
    assert response["Content-Encoding"] == "gzip"
    assert "immutable" in response["Cache-Control"]
