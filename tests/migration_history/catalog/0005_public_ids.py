"""Random public ids for suppliers and revisions. Existing rows get one each;
the results and events that named a revision by its integer key name it by
its public id from now on."""

import uuid

from django.db import migrations, models


def fill_public_ids(apps, schema_editor):
    Supplier = apps.get_model("catalog", "Supplier")
    CatalogRevision = apps.get_model("catalog", "CatalogRevision")
    Job = apps.get_model("jobs", "Job")
    for model in (Supplier, CatalogRevision):
        for pk in model.objects.filter(public_id__isnull=True).values_list("pk", flat=True).iterator():
            model.objects.filter(pk=pk).update(public_id=uuid.uuid4())
    for revision in CatalogRevision.objects.values("pk", "public_id", "job_id").iterator():
        job = Job.objects.filter(pk=revision["job_id"]).values("result").first()
        result = (job or {}).get("result")
        if isinstance(result, dict) and result.get("revision_id") == revision["pk"]:
            result["revision_id"] = str(revision["public_id"])
            Job.objects.filter(pk=revision["job_id"]).update(result=result)


def restore_integer_results(apps, schema_editor):
    CatalogRevision = apps.get_model("catalog", "CatalogRevision")
    Job = apps.get_model("jobs", "Job")
    for revision in CatalogRevision.objects.values("pk", "public_id", "job_id").iterator():
        job = Job.objects.filter(pk=revision["job_id"]).values("result").first()
        result = (job or {}).get("result")
        if isinstance(result, dict) and result.get("revision_id") == str(revision["public_id"]):
            result["revision_id"] = revision["pk"]
            Job.objects.filter(pk=revision["job_id"]).update(result=result)


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0004_apitoken_scope"),
        ("jobs", "0002_webhook_delivery"),
    ]

    operations = [
        migrations.AddField(
            model_name="supplier", name="public_id", field=models.UUIDField(editable=False, null=True)
        ),
        migrations.AddField(
            model_name="catalogrevision", name="public_id", field=models.UUIDField(editable=False, null=True)
        ),
        migrations.RunPython(fill_public_ids, restore_integer_results),
        migrations.AlterField(
            model_name="supplier",
            name="public_id",
            field=models.UUIDField(default=uuid.uuid4, editable=False, unique=True),
        ),
        migrations.AlterField(
            model_name="catalogrevision",
            name="public_id",
            field=models.UUIDField(default=uuid.uuid4, editable=False, unique=True),
        ),
    ]
