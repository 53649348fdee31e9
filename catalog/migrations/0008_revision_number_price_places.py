from decimal import Decimal

from django.db import migrations, models
from django.db.models import F, Window
from django.db.models.functions import RowNumber


def number_revisions(apps, schema_editor):
    """Number every supplier's revisions 1, 2, 3 ... in order of publication
    (and a workspace's revisions without a supplier likewise)."""
    CatalogRevision = apps.get_model("catalog", "CatalogRevision")
    numbered = CatalogRevision.objects.annotate(
        n=Window(RowNumber(), partition_by=[F("workspace_id"), F("supplier_id")],
                 order_by=[F("published_at").asc(), F("pk").asc()]))
    for pk, n in numbered.values_list("pk", "n"):
        CatalogRevision.objects.filter(pk=pk).update(number=n)


def price_places(apps, schema_editor):
    """Prices published before the places were kept show as they did: with
    at least two decimals, more when the value needs them."""
    CatalogItem = apps.get_model("catalog", "CatalogItem")
    for places in range(3, 7):
        step = Decimal(1).scaleb(-(places - 1))
        # A value with a nonzero digit at `places` needs that many decimals.
        CatalogItem.objects.annotate(r=models.F("unit_price") % step).filter(r__gt=0).update(
            price_places=places)


class Migration(migrations.Migration):

    dependencies = [
        ("catalog", "0007_pricesheet_supplier_name"),
    ]

    operations = [
        migrations.AddField(
            model_name="catalogrevision",
            name="number",
            field=models.PositiveIntegerField(null=True),
        ),
        migrations.RunPython(number_revisions, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="catalogrevision",
            name="number",
            field=models.PositiveIntegerField(),
        ),
        migrations.AddConstraint(
            model_name="catalogrevision",
            constraint=models.UniqueConstraint(condition=models.Q(("supplier__isnull", False)),
                                               fields=("supplier", "number"), name="revision_unique_number"),
        ),
        migrations.AddConstraint(
            model_name="catalogrevision",
            constraint=models.UniqueConstraint(condition=models.Q(("supplier__isnull", True)),
                                               fields=("workspace", "number"),
                                               name="revision_unique_number_without_supplier"),
        ),
        migrations.AddField(
            model_name="catalogitem",
            name="price_places",
            field=models.PositiveSmallIntegerField(default=2),
        ),
        migrations.RunPython(price_places, migrations.RunPython.noop),
    ]
