import getpass

from django.core.management.base import BaseCommand, CommandError

from accounts.models import Membership, Workspace
from accounts.services import membership_add


class Command(BaseCommand):
    help = "Add a user to a workspace with a role, creating the user if missing."

    def add_arguments(self, parser) -> None:
        parser.add_argument("slug")
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=Membership.Role.values)
        parser.add_argument(
            "--password", default=None, help="set this password (prompted for a new user when omitted)"
        )

    def handle(self, *args, slug: str, username: str, role: str, password: str | None, **options) -> None:
        try:
            workspace = Workspace.objects.get(slug=slug)
        except Workspace.DoesNotExist:
            raise CommandError(f"no workspace {slug!r}") from None
        from django.contrib.auth import get_user_model

        exists = get_user_model().objects.filter(username=username).exists()
        if password is None and not exists and options.get("interactive", True):
            try:
                password = getpass.getpass(f"password for {username}: ")
            except (EOFError, KeyboardInterrupt):
                password = None
        if password:
            self._validate(username, password)
        membership_add(workspace=workspace, username=username, role=role, password=password or None)
        self.stdout.write(f"{username} is {role} in {workspace.slug}")

    def _validate(self, username: str, password: str) -> None:
        """AUTH_PASSWORD_VALIDATORS, as the admin's password forms apply them."""
        from django.contrib.auth import get_user_model
        from django.contrib.auth.password_validation import validate_password
        from django.core.exceptions import ValidationError

        model = get_user_model()
        user = model.objects.filter(username=username).first() or model(username=username)
        try:
            validate_password(password, user=user)
        except ValidationError as exc:
            raise CommandError("the password is refused: " + " ".join(exc.messages)) from None
