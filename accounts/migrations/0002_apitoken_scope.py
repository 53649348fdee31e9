from django.db import migrations, models


class Migration(migrations.Migration):
    """Token scopes, full or read. This was catalog 0004 while API tokens
    were part of the catalog; a database that applied that one counts this
    one as applied (the column and the check are already there)."""

    replaces = [("catalog", "0004_apitoken_scope")]

    dependencies = [
        ("accounts", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="scope",
            field=models.CharField(choices=[("full", "Full"), ("read", "Read")], default="full", max_length=8),
        ),
        migrations.AddConstraint(
            model_name="apitoken",
            constraint=models.CheckConstraint(condition=models.Q(("scope__in", ["full", "read"])),
                                              name="apitoken_scope_valid"),
        ),
    ]
