"""Settings: read from the environment once, in config/settings.py, each
value checked as it is read; every other module uses `settings.NAME`."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import Environment

ROOT = Path(__file__).resolve().parents[2]
# The product's packages. config/ is where the environment is read.
PACKAGES = ("accounts", "jobs", "catalog", "review")
# Reads of the environment outside config/ that are not settings, each with
# its reason: (path, what) -> why. None today; add one here, with the why,
# before adding such a read (a child process's own environment, say).
ALLOWED: dict[tuple[str, str], str] = {}


def _reads_around_settings(source: str) -> list[str]:
    """Each way a module reads the environment itself or gives a setting a
    default of its own: `os.environ`, `os.getenv`, `from os import environ`,
    django-environ, `getattr(settings, NAME, default)`, `hasattr(settings, NAME)`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
            and node.attr in ("environ", "environb", "getenv", "putenv")
        ):
            found.append(f"os.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [
                f"from os import {a.name}"
                for a in node.names
                if a.name in ("environ", "environb", "getenv", "putenv")
            ]
        elif isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name == "environ"]
        elif isinstance(node, ast.ImportFrom) and node.module == "environ":
            found.append("from environ import ...")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and node.args
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id == "settings"
            and (node.func.id == "hasattr" or len(node.args) == 3)
        ):
            found.append(f"{node.func.id}(settings, ...)")
    return found


def test_the_scan_finds_each_way_around_settings():
    source = """
import os
import environ
from os import getenv
from django.conf import settings
a = os.environ.get("X")
b = os.getenv("Y", "1")
c = getattr(settings, "Z", 3)
d = hasattr(settings, "Z")
e = getattr(settings, "Z")
f = os.getpid()
"""
    assert sorted(_reads_around_settings(source)) == sorted(
        [
            "import environ",
            "from os import getenv",
            "os.environ",
            "os.getenv",
            "getattr(settings, ...)",
            "hasattr(settings, ...)",
        ]
    )


def test_no_module_outside_config_reads_the_environment_or_defaults_a_setting():
    offending = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = str(path.relative_to(ROOT))
            offending += [
                f"{relative}: {what}"
                for what in _reads_around_settings(path.read_text())
                if (relative, what) not in ALLOWED
            ]
    assert offending == []


# --- each value checked as it is read ---------------------------------------------


@pytest.fixture
def environment(monkeypatch):
    def with_values(**values):
        for name, value in values.items():
            monkeypatch.setenv(name, value)
        return Environment()

    return with_values


@pytest.mark.parametrize(
    ("read", "value", "message"),
    [
        (lambda e: e.int("SETTING_UNDER_TEST", 5), "abc", "SETTING_UNDER_TEST='abc' is not a whole number"),
        (
            lambda e: e.int("SETTING_UNDER_TEST", 5, minimum=1),
            "0",
            "SETTING_UNDER_TEST='0' must be at least 1",
        ),
        (lambda e: e.float("SETTING_UNDER_TEST", 1.0), "12s", "SETTING_UNDER_TEST='12s' is not a number"),
        (lambda e: e.float("SETTING_UNDER_TEST", 1.0), "nan", "SETTING_UNDER_TEST='nan' is not a number"),
        (
            lambda e: e.float("SETTING_UNDER_TEST", 1.0, above=0),
            "0",
            "SETTING_UNDER_TEST='0' must be more than 0",
        ),
        (
            lambda e: e.bool("SETTING_UNDER_TEST", False),
            "maybe",
            "SETTING_UNDER_TEST='maybe' is not true or false",
        ),
        (
            lambda e: e.str("SETTING_UNDER_TEST", "a", choices=("a", "b")),
            "c",
            "SETTING_UNDER_TEST='c' must be one of: a, b",
        ),
    ],
)
def test_a_value_that_does_not_parse_is_refused_naming_its_variable(environment, read, value, message):
    with pytest.raises(ImproperlyConfigured) as refused:
        read(environment(SETTING_UNDER_TEST=value))
    assert str(refused.value).startswith(message)


def test_values_that_parse_are_read_and_empty_numbers_are_unset(environment):
    env = environment(A_INT=" 1_000 ", A_FLOAT="0.25", A_ON="Yes", A_OFF="off", A_EMPTY="")
    assert env.int("A_INT", 5, minimum=1) == 1000
    assert env.float("A_FLOAT", 1.0, above=0) == 0.25
    assert env.bool("A_ON", False) is True
    assert env.bool("A_OFF", True) is False
    assert env.int("A_EMPTY", 7) == 7
    assert env.bool("A_EMPTY", True) is True
    assert env.str("A_EMPTY", "x") == ""
    assert env.float("A_UNSET_SETTING", 2.5) == 2.5
    with pytest.raises(ImproperlyConfigured, match="^A_UNSET_SETTING must be set$"):
        env.str("A_UNSET_SETTING")
    assert env.names == [
        "A_INT",
        "A_FLOAT",
        "A_ON",
        "A_OFF",
        "A_EMPTY",
        "A_EMPTY",
        "A_EMPTY",
        "A_UNSET_SETTING",
        "A_UNSET_SETTING",
    ]


def test_a_bad_setting_stops_the_start_naming_the_variable():
    env = {**os.environ, "JOB_MAX_ATTEMPTS": "five"}
    started = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode != 0
    assert "ImproperlyConfigured: JOB_MAX_ATTEMPTS='five' is not a whole number" in started.stderr


# --- the README's table -------------------------------------------------------------


def _settings_variables() -> set[str]:
    source = (ROOT / "config" / "settings.py").read_text()
    return set(re.findall(r'env\.\w+\(\s*"([A-Z][A-Z0-9_]*)"', source))


def _readme_table_variables() -> set[str]:
    section = (ROOT / "README.md").read_text().split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    names = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            names |= set(re.findall(r"`([A-Z][A-Z0-9_]*)`", line.split("|")[1]))
    return names


def test_the_readme_settings_table_lists_exactly_the_variables_the_settings_read():
    import config.settings

    read = _settings_variables()
    # Every read this process made is one the scan of the source found.
    assert set(config.settings.env.names) <= read
    assert "JOB_LEASE_SECONDS" in read and "SHEETS_S3_BUCKET" in read
    assert sorted(read - _readme_table_variables()) == []
    assert sorted(_readme_table_variables() - read) == []
