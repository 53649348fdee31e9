from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from catalog.models import Membership
from catalog.services import membership_add, supplier_get_or_create, workspace_create
from catalog.services import pricesheet_admit

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"
WORKSPACE = "demo"
USERNAME = "demo"
PASSWORD = "demo-password"
SUPPLIER = "Demo Hardware"
# (file, supplier): one sheet that publishes, one that waits for a reviewer
# because it names no currency.
SHEETS = [("demo-clean.csv", SUPPLIER), ("demo-needs-review.csv", "Demo Garden")]
CHUNK = 64 * 1024


def _chunks(path: Path):
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            yield chunk


class Command(BaseCommand):
    help = ("Create the demo workspace and user (workspace admin, staff, superuser) and "
            "upload the demo sheets once. Safe to run again: nothing is duplicated.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000/",
                            help="the address printed for signing in")

    def handle(self, *args, url: str, **options) -> None:
        workspace = workspace_create(slug=WORKSPACE, name="Demo workspace")
        membership = membership_add(workspace=workspace, username=USERNAME,
                                    role=Membership.Role.ADMIN, password=PASSWORD)
        get_user_model().objects.filter(pk=membership.user_id).update(
            is_staff=True, is_superuser=True)
        supplier_get_or_create(workspace=workspace, name=SUPPLIER)
        for name, supplier in SHEETS:
            path = DEMO_DIR / name
            # A fixed key per demo sheet: a second run finds the first run's job.
            job, created = pricesheet_admit(
                workspace=workspace, chunks=_chunks(path), original_name=name,
                content_type="text/csv", supplier_name=supplier,
                idempotency_key=f"seeddemo:{name}", user=membership.user,
            )
            verb = "queued" if created else "already there"
            self.stdout.write(f"{name}: job {job.pk} {verb} ({job.state})")
        self.stdout.write(self.style.SUCCESS(
            f"Demo ready: open {url} and sign in as {USERNAME} / {PASSWORD}"))
