"""Migrate the database in DATABASE_URL with the migrations of before the
move and fill it with one of everything; prints the API token it created.

`python -m tests.migration_history.build first` stops at the first schema
(catalog 0002, jobs 0002); `... last` applies every former migration (token
scopes, public ids, unit codes, webhook secret rotation). Run from the
project folder."""

import sys

import django
from django.conf import settings

FORMER = {
    "catalog": "tests.migration_history.catalog",
    "jobs": "tests.migration_history.jobs",
    "review": "tests.migration_history.review",
    "accounts": None,  # did not exist yet
}
FIRST = [("catalog", "0002_initial"), ("jobs", "0002_webhook_delivery"), ("review", "0001_initial")]
TOKEN = "psk_token-from-before-the-move"
JOB_ID = "00000000-0000-0000-0000-000000000001"


def main(which: str) -> None:
    settings.MIGRATION_MODULES = FORMER
    django.setup()
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    from accounts.services import _token_hash

    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    targets = leaves if which == "last" else [*FIRST, *(key for key in leaves if key[0] not in FORMER)]
    executor.migrate(targets)
    apps = MigrationExecutor(connection).loader.project_state(targets).apps

    def model(label: str):
        return apps.get_model(*label.split("."))

    # The content types and a permission of the time, as `migrate` made them.
    content_types = {
        name: model("contenttypes.ContentType").objects.create(app_label="catalog", model=name)
        for name in ("workspace", "membership", "apitoken")
    }
    permission = model("auth.Permission").objects.create(
        name="Can change api token", content_type=content_types["apitoken"], codename="change_apitoken"
    )
    user = model("auth.User").objects.create(username="ulla", password="!", is_staff=True)
    user.user_permissions.add(permission)
    workspace = model("catalog.Workspace").objects.create(slug="before", name="Before the move")
    model("catalog.Membership").objects.create(workspace=workspace, user=user, role="reviewer")
    model("catalog.ApiToken").objects.create(
        user=user, name="old", prefix=TOKEN[:12], token_hash=_token_hash(TOKEN)
    )
    supplier = model("catalog.Supplier").objects.create(workspace=workspace, name="Old Supplier")
    job = model("jobs.Job").objects.create(
        id=JOB_ID,
        kind="parse_sheet",
        workspace=workspace,
        state="completed",
        attempt=1,
        max_attempts=5,
        idempotency_key="old-key",
        result={"item_count": 1},
    )
    revision = model("catalog.CatalogRevision").objects.create(
        workspace=workspace, supplier=supplier, job=job, attempt=1, item_count=1
    )
    model("catalog.CatalogItem").objects.create(
        revision=revision,
        sku="OLD-1",
        description="Kept across the move",
        unit_price="1.5",
        currency="EUR",
        source_sheet="Sheet1",
        source_row=2,
    )
    print(TOKEN)


if __name__ == "__main__":
    main(sys.argv[1])
