"""Settings for the admission benchmark's gunicorn: the product's own, plus
one URL, `POST /bench/floor-upload`, served by bench/floor_urls.py."""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "bench.floor_urls"
