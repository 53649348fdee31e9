from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from accounts.models import Membership, Workspace
from accounts.services import membership_add, workspace_create
from catalog.services import pricesheet_admit
from jobs.models import Job

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
    help = (
        "Create the demo workspace and user (workspace admin, staff, superuser) and "
        "upload the demo sheets once. Safe to run again: it changes nothing that "
        "exists (not the demo user's password, so nobody is signed out)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--url", default="http://127.0.0.1:8000/", help="the address printed for signing in"
        )

    def handle(self, *args, url: str, **options) -> None:
        # Everything is looked up before it is created: a second run writes
        # nothing, and no INSERT fails on a unique constraint (each such
        # failure is an ERROR line in the database's log).
        workspace = Workspace.objects.filter(slug=WORKSPACE).first() or workspace_create(
            slug=WORKSPACE, name="Demo workspace"
        )
        user = get_user_model().objects.filter(username=USERNAME).first()
        if user is None:
            user = membership_add(
                workspace=workspace, username=USERNAME, role=Membership.Role.ADMIN, password=PASSWORD
            ).user
            get_user_model().objects.filter(pk=user.pk).update(is_staff=True, is_superuser=True)
        elif not Membership.objects.filter(workspace=workspace, user=user).exists():
            # No password: an existing user's password (and so sessions) stay as they are.
            membership_add(workspace=workspace, username=USERNAME, role=Membership.Role.ADMIN)
        for name, supplier in SHEETS:
            key = f"seeddemo:{name}"
            # A fixed key per demo sheet: a second run finds the first run's job.
            job = Job.objects.filter(workspace=workspace, idempotency_key=key).first()
            if job is not None:
                self.stdout.write(f"{name}: job {job.pk} already there ({job.state})")
                continue
            path = DEMO_DIR / name
            job, _ = pricesheet_admit(
                workspace=workspace,
                chunks=_chunks(path),
                original_name=name,
                content_type="text/csv",
                supplier_name=supplier,
                idempotency_key=key,
                user=user,
            )
            self.stdout.write(f"{name}: job {job.pk} queued ({job.state})")
        self.stdout.write(
            self.style.SUCCESS(f"Demo ready: open {url} and sign in as {USERNAME} / {PASSWORD}")
        )
