from django.core.management.base import BaseCommand, CommandError

from accounts.models import Workspace
from jobs import registry
from jobs.management.argtypes import positive_int
from jobs.services import jobs_admit_many


class Command(BaseCommand):
    help = "Admit jobs of a kind that needs no input (e.g. noop), for operators and benchmarks."

    def add_arguments(self, parser) -> None:
        parser.add_argument("kind")
        parser.add_argument("--workspace", required=True, help="workspace slug")
        parser.add_argument("--count", type=positive_int, default=1)

    def handle(self, *args, kind: str, workspace: str, count: int, **options) -> None:
        if registry.get_handler(kind) is None:
            raise CommandError(f"unknown job kind {kind!r}; known: {', '.join(registry.kinds())}")
        try:
            space = Workspace.objects.get(slug=workspace)
        except Workspace.DoesNotExist:
            raise CommandError(f"no workspace {workspace!r}") from None
        admitted = 0
        while admitted < count:
            admitted += jobs_admit_many(workspace_id=space.pk, kind=kind, count=min(5000, count - admitted))
        self.stdout.write(f"{admitted} {kind} job(s) queued in {space.slug}")
