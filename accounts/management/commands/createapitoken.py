from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from accounts.models import ApiToken
from accounts.services import apitoken_create


class Command(BaseCommand):
    help = (
        "Create an API bearer token for a user; it is printed once and stored hashed. "
        "`--scope read` makes a token that may only read."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="")
        parser.add_argument(
            "--scope",
            choices=ApiToken.Scope.values,
            default=ApiToken.Scope.FULL,
            help="full (the default): everything the user may do; read: GET only",
        )

    def handle(self, *args, username: str, name: str, scope: str, **options) -> None:
        try:
            user = get_user_model().objects.get(username=username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user {username!r}") from None
        _, token = apitoken_create(user=user, name=name, scope=scope)
        self.stdout.write(token)
