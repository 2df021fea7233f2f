from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from portal.models import ApiToken, Scope


class Command(BaseCommand):
    help = (
        "Create an API token for a user and print it, alone on stdout, so that a script can "
        "capture it: TOKEN=$(python manage.py create_api_token alice). It is not shown again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="command line", help="What the token is for.")
        parser.add_argument(
            "--scope",
            choices=[scope.value for scope in Scope],
            default=Scope.SUBMIT.value,
            help="What it may do: read, compose (and check), or submit (and cancel). "
            "Default: submit.",
        )

    def handle(
        self, *args: object, username: str, name: str, scope: str, **options: object
    ) -> None:
        user_model = get_user_model()
        try:
            user = user_model._default_manager.get_by_natural_key(username)
        except user_model.DoesNotExist:
            raise CommandError(f"No user named '{username}'.") from None
        if not user.is_active:
            raise CommandError(f"The user '{username}' is inactive: the API would refuse a token.")
        name = name.strip()
        if not name or len(name) > ApiToken._meta.get_field("name").max_length:
            raise CommandError("--name must be 1 to 100 characters.")
        _, secret = ApiToken.issue(user, name, Scope(scope))
        # stdout only, never through logging, so that the token lands in no log file.
        self.stdout.write(secret)
