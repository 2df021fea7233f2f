import os
import secrets
import sys

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from portal.env import env_str

USERNAME = "admin"


def _manage_py() -> str:
    # What to type to run manage.py again: `.venv/bin/python manage.py` after `make run`.
    python = os.path.relpath(sys.executable)
    if python.startswith(".."):
        python = sys.executable
    return f"{python} manage.py"


class Command(BaseCommand):
    help = (
        f"Create the superuser '{USERNAME}' unless a superuser exists. The password comes from "
        "PORTAL_ADMIN_PASSWORD, or is generated and printed once."
    )

    def handle(self, *args: object, **options: object) -> None:
        user_model = get_user_model()
        admins = list(
            user_model.objects.filter(is_superuser=True)
            .order_by("username")
            .values_list("username", flat=True)
        )
        if admins:
            self.stdout.write(
                f"An administrator already exists: log in as {', '.join(admins)}. "
                f"To reset a password: {_manage_py()} changepassword USERNAME"
            )
            return
        if user_model.objects.filter(username=USERNAME).exists():
            raise CommandError(
                f"No superuser exists, and the user '{USERNAME}' exists but is not one. Make it a "
                f"superuser in `{_manage_py()} shell`, or run `{_manage_py()} createsuperuser`."
            )

        password = env_str("PORTAL_ADMIN_PASSWORD", None)
        generated = password is None
        if password is None:
            password = secrets.token_urlsafe(16)
        else:
            try:
                validate_password(password)
            except ValidationError as exc:
                raise CommandError(
                    f"PORTAL_ADMIN_PASSWORD is too weak: {' '.join(exc.messages)}"
                ) from None

        user_model.objects.create_superuser(username=USERNAME, email="", password=password)
        # Written to stdout only, never through logging, so the password lands in no log file.
        if generated:
            self.stdout.write(
                f"Created the administrator '{USERNAME}' with password: {password}\n"
                "This password is shown only once. Change it with: "
                f"{_manage_py()} changepassword {USERNAME}"
            )
        else:
            self.stdout.write(
                f"Created the administrator '{USERNAME}' "
                "with the password from PORTAL_ADMIN_PASSWORD."
            )
