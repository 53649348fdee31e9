from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "catalog"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from catalog import handlers  # noqa: F401  (registers `parse_sheet`)
