from django.core.management.base import BaseCommand

from accounts.services import workspace_create


class Command(BaseCommand):
    help = "Create a workspace (no change if the slug exists)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", default="")

    def handle(self, *args, slug: str, name: str, **options) -> None:
        workspace = workspace_create(slug=slug, name=name)
        self.stdout.write(f"workspace {workspace.slug} ({workspace.name})")
