"""Loaded by pytest before Django's settings (`-p tests.environment` in
pytest.ini): the tests run with DEBUG off, as production does, so they need
a key of their own and plain HTTP (the test client and live server speak
HTTP)."""

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz")
os.environ.setdefault("HTTPS", "false")
