"""The data migration that gives existing suppliers and revisions their
public ids, and makes a job's stored result name its revision by that id."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("catalog", "0003_catalogitem_unit_code")]
AFTER = [("catalog", "0005_public_ids")]


@pytest.mark.django_db(transaction=True)
def test_existing_rows_get_distinct_public_ids_and_results_follow():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    workspace = old.get_model("accounts", "Workspace").objects.create(slug="acme", name="Acme")
    Supplier = old.get_model("catalog", "Supplier")
    suppliers = [Supplier.objects.create(workspace=workspace, name=n) for n in ("A", "B")]
    Job = old.get_model("jobs", "Job")
    revisions = []
    for n, supplier in enumerate(suppliers):
        job = Job.objects.create(
            kind="parse_sheet", workspace=workspace, max_attempts=5, state="completed", attempt=1
        )
        revision = old.get_model("catalog", "CatalogRevision").objects.create(
            workspace=workspace, supplier=supplier, job=job, attempt=1, item_count=n
        )
        Job.objects.filter(pk=job.pk).update(result={"revision_id": revision.pk, "item_count": n})
        revisions.append(revision)

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    try:
        NewSupplier = new.get_model("catalog", "Supplier")
        NewRevision = new.get_model("catalog", "CatalogRevision")
        supplier_ids = set(NewSupplier.objects.values_list("public_id", flat=True))
        revision_ids = {r.pk: r.public_id for r in NewRevision.objects.all()}
        assert None not in supplier_ids and len(supplier_ids) == 2
        assert None not in revision_ids.values() and len(set(revision_ids.values())) == 2
        for revision in revisions:
            result = new.get_model("jobs", "Job").objects.get(pk=revision.job_id).result
            assert result["revision_id"] == str(revision_ids[revision.pk])
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
