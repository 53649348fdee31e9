"""Moving workspaces, members and API tokens to `accounts` moved no data:
the migrations apply to an empty database and to databases built with the
former migrations (tests/migration_history), and all end with the same
schema."""

import json
import subprocess
import sys

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.loader import MigrationLoader

from tests.helpers import ROOT, database_url, subprocess_env

LAYERS = ["accounts", "jobs", "catalog", "review"]

SCHEMA_SQL = """
SELECT 'column', table_name, column_name || ' ' || data_type || ' ' || is_nullable
       || ' ' || coalesce(column_default, '')
FROM information_schema.columns WHERE table_schema = 'public'
UNION ALL
SELECT 'constraint', conrelid::regclass::text, conname || ' ' || pg_get_constraintdef(oid)
FROM pg_constraint WHERE connamespace = 'public'::regnamespace
UNION ALL
SELECT 'index', tablename, indexdef FROM pg_indexes WHERE schemaname = 'public'
"""

VERIFY = """
import json, django
django.setup()
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from accounts.models import Membership, Workspace
from accounts.services import apitoken_authenticate
from catalog.models import CatalogRevision
from jobs.models import Job

job = Job.objects.select_related("workspace").get(idempotency_key="old-key")
revision = CatalogRevision.objects.get(job=job)
with connection.cursor() as cursor:
    cursor.execute({schema!r})
    schema = sorted(map(list, cursor.fetchall()))
print(json.dumps({{
    "workspace": Workspace.objects.get().slug,
    "role": Membership.objects.get().role,
    "job_workspace": job.workspace.slug,
    "items": list(revision.items.values_list("sku", flat=True)),
    "token_user": getattr(getattr(apitoken_authenticate(token={token!r}), "user", None),
                          "username", None),
    "content_type": ContentType.objects.get_for_model(Workspace).app_label,
    "may_revoke_tokens": get_user_model().objects.get(username="ulla").has_perm(
        "accounts.change_apitoken"),
    "schema": schema,
}}))
"""


def _schema() -> list[list[str]]:
    with connection.cursor() as cursor:
        cursor.execute(SCHEMA_SQL)
        return sorted(map(list, cursor.fetchall()))


def _run(env: dict, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture
def upgrade_database(transactional_db):
    """An empty database beside the test database, dropped afterwards."""
    name = f"{connection.settings_dict['NAME']}_upgrade"
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        cursor.execute(f'CREATE DATABASE "{name}"')
    url = database_url().replace(f"/{connection.settings_dict['NAME']}", f"/{name}", 1)
    yield subprocess_env(DATABASE_URL=url)
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.parametrize("release", ["first", "last"])
def test_migrating_a_database_built_before_the_move_keeps_its_data(upgrade_database, release):
    """`first`: the first schema; `last`: every migration made before the move."""
    token = _run(upgrade_database, "-m", "tests.migration_history.build", release).strip()
    _run(upgrade_database, "manage.py", "migrate", "--noinput")
    found = json.loads(_run(upgrade_database, "-c", VERIFY.format(schema=SCHEMA_SQL, token=token)))
    assert found["workspace"] == "before"
    assert found["role"] == "reviewer"
    assert found["job_workspace"] == "before"
    assert found["items"] == ["OLD-1"]
    assert found["token_user"] == "ulla"
    assert found["content_type"] == "accounts"
    assert found["may_revoke_tokens"] is True
    # The same tables, columns, constraints and indexes as a new database.
    assert found["schema"] == _schema()


def test_the_models_match_the_migrations(db):
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


def test_migrations_go_only_from_a_lower_layer_to_a_higher_one(db):
    graph = MigrationLoader(None, ignore_no_migrations=True).graph
    upward = sorted(
        f"{key[0]}.{key[1]} depends on {parent[0]}.{parent[1]}"
        for key in graph.nodes
        if key[0] in LAYERS
        for parent in graph.node_map[key].parents
        if parent[0] in LAYERS and LAYERS.index(parent[0]) > LAYERS.index(key[0])
    )
    assert upward == []
