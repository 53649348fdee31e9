from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from catalog.services import apitoken_create


class Command(BaseCommand):
    help = "Create an API bearer token for a user; it is printed once and stored hashed."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="")

    def handle(self, *args, username: str, name: str, **options) -> None:
        try:
            user = get_user_model().objects.get(username=username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user {username!r}") from None
        _, token = apitoken_create(user=user, name=name)
        self.stdout.write(token)
