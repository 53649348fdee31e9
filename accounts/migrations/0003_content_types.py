from django.db import migrations

MODELS = ("workspace", "membership", "apitoken")


def move_content_types(apps, schema_editor):
    """The models' content types move from `catalog` to this app, so the
    permissions granted on them and the admin history stay attached. A new
    database has none yet: nothing to do."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not ContentType.objects.filter(app_label="accounts", model=model).exists():
            ContentType.objects.filter(app_label="catalog", model=model).update(app_label="accounts")


def restore_content_types(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not ContentType.objects.filter(app_label="catalog", model=model).exists():
            ContentType.objects.filter(app_label="accounts", model=model).update(app_label="catalog")


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0002_apitoken_scope"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.RunPython(move_content_types, restore_content_types),
    ]
