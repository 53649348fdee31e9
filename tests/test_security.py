"""Safe defaults: no development key without DEBUG, HTTPS hardening on by
default, a strict script policy, no caching of private answers, no password
reset, and `check --deploy` clean with only the three required settings."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

from accounts.services import apitoken_create
from tests.helpers import database_url

ROOT = Path(__file__).resolve().parent.parent
STRONG_KEY = "k7Hq2Zp9Lm4Xv8Rt1Ws6Yb3Nc5Df0Gj-Ae2Kx7Uo9Pi4Vl1Qs8Tz3Mh6Rb5Wn0Cy"
SHOW = (
    "from django.conf import settings as s; print(s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE, "
    "s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS > 0)"
)


def django_python(code: str, **env: str) -> subprocess.CompletedProcess:
    """Run code after django.setup() in a process whose environment is only `env`."""
    base = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings"}
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("key", [None, "django-insecure-development-key-not-for-production"])
@pytest.mark.parametrize("with_database_url", [False, True])
def test_the_development_key_is_refused_whenever_debug_is_off(key, with_database_url, db):
    env = {"DEBUG": "false"}
    if key:
        env["SECRET_KEY"] = key
    if with_database_url:
        env["DATABASE_URL"] = database_url()
    result = django_python("print('started')", **env)
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr
    assert "started" not in result.stdout


def test_debug_may_use_the_development_key(db):
    result = django_python(
        "from django.conf import settings; print(settings.SECRET_KEY)",
        DEBUG="true",
        DATABASE_URL=database_url(),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "django-insecure-development-key-not-for-production"


def test_https_hardening_is_on_by_default_and_one_switch_turns_it_off(db):
    env = {"DEBUG": "false", "SECRET_KEY": STRONG_KEY, "DATABASE_URL": database_url()}
    on = django_python(SHOW, **env)
    off = django_python(SHOW, **env, HTTPS="false")
    assert (on.returncode, off.returncode) == (0, 0), on.stderr + off.stderr
    assert on.stdout.split() == ["True", "True", "True", "True"]
    assert off.stdout.split() == ["False", "False", "False", "False"]


def test_check_deploy_is_clean_with_only_the_required_settings(db):
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={
            "PATH": "/usr/bin:/bin",
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DEBUG": "false",
            "DATABASE_URL": database_url(),
            "SECRET_KEY": STRONG_KEY,
            "ALLOWED_HOSTS": "prices.example.com",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


# --- headers ----------------------------------------------------------------------------


def test_pages_carry_a_script_policy_without_inline_scripts(client):
    response = client.get("/accounts/login/")
    policy = response["Content-Security-Policy"]
    script_src = re.search(r"script-src ([^;]*)", policy).group(1)
    assert script_src.split() == ["'self'"]
    assert "frame-ancestors 'none'" in policy
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"


def test_no_template_holds_an_inline_script_or_event_handler():
    offenders = []
    # The project's templates: the top-level folder and each app's (not the
    # packages of a virtualenv, such as the benchmarks' in bench/out/).
    for path in [*ROOT.glob("templates/**/*.html"), *ROOT.glob("*/templates/**/*.html")]:
        text = path.read_text()
        if re.search(r"<script(?![^>]*\bsrc=)[^>]*>", text) or re.search(r"\son[a-z]+\s*=", text):
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_signed_in_pages_api_answers_and_exports_are_not_stored(client, member):
    client.force_login(member)
    for path in ("/jobs/", "/catalog/", "/catalog/revisions/999999/export.csv"):
        assert "no-store" in client.get(path)["Cache-Control"], path
    api = Client(HTTP_AUTHORIZATION=f"Bearer {apitoken_create(user=member)[1]}")
    assert "no-store" in api.get("/api/jobs")["Cache-Control"]


def test_password_reset_is_not_offered(client):
    assert client.get("/accounts/password_reset/").status_code == 404
    assert client.post("/accounts/password_reset/", {"email": "a@example.com"}).status_code == 404


def test_a_short_secret_key_is_refused_whenever_debug_is_off(db):
    short = "k7Hq2Zp9Lm4Xv8Rt1Ws6Yb3Nc5Df0Gj7"  # random, but 32 characters
    refused = django_python("print('started')", DEBUG="false", SECRET_KEY=short, DATABASE_URL=database_url())
    assert refused.returncode != 0
    assert "SECRET_KEY is 32 characters long" in refused.stderr
    allowed = django_python("print('started')", DEBUG="true", SECRET_KEY=short, DATABASE_URL=database_url())
    assert allowed.returncode == 0, allowed.stderr
