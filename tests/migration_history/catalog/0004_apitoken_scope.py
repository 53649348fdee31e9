from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0003_catalogitem_unit_code"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="scope",
            field=models.CharField(
                choices=[("full", "Full"), ("read", "Read")], default="full", max_length=8
            ),
        ),
        migrations.AddConstraint(
            model_name="apitoken",
            constraint=models.CheckConstraint(
                condition=models.Q(("scope__in", ["full", "read"])), name="apitoken_scope_valid"
            ),
        ),
    ]
