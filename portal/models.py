"""API tokens: how scripts and command-line tools authenticate to the JSON API (portal/api.py)."""

import hashlib
import secrets
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models
from django.utils import timezone

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser

# Recognisable in a leaked file or a secret scanner's report; not part of the secret's strength.
TOKEN_PREFIX = "gp_"
# Enough of the token to tell tokens apart on the settings page, too little to guess the rest.
VISIBLE_CHARS = 8


class Scope(models.TextChoices):
    """What a token may do, each scope including the ones before it. A token given to a program
    (a coding agent, a notebook) needs no more than that program's part."""

    READ = "read", "Read only: clusters, guidance, and your jobs, their output and GPU use"
    COMPOSE = "compose", "Also compose and check: advice, scripts, checks, start estimates"
    SUBMIT = "submit", "Also submit and cancel jobs"

    @property
    def rank(self) -> int:
        return list(Scope).index(self)

    def allows(self, needed: "Scope") -> bool:
        return self.rank >= needed.rank


def _digest(secret: str) -> str:
    # 256 random bits need no salt or slow hash: nobody can brute-force them from the digest.
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiToken(models.Model):
    # Spelled out because the portal app has no AppConfig to set default_auto_field.
    id = models.BigAutoField(primary_key=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'laptop'.")
    prefix = models.CharField(max_length=VISIBLE_CHARS)
    # The SHA-256 of the token: the token itself is shown once and never stored.
    token_hash = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(default=timezone.now)
    last_used = models.DateTimeField(null=True, blank=True)
    # Tokens made before scopes existed could do everything: they keep that.
    scope = models.CharField(max_length=10, choices=Scope.choices, default=Scope.SUBMIT)
    # Kept, not deleted, so that an admin can still see which token was used until when.
    revoked = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @classmethod
    def issue(
        cls, user: "AbstractBaseUser", name: str, scope: Scope = Scope.SUBMIT
    ) -> tuple["ApiToken", str]:
        """A new token for user, and its secret: the only time the secret is known."""
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token = cls.objects.create(
            user=user,
            name=name,
            scope=scope,
            prefix=secret[:VISIBLE_CHARS],
            token_hash=_digest(secret),
        )
        return token, secret

    @classmethod
    def find(cls, secret: str) -> "ApiToken | None":
        """The live token of an active user with this secret, or None."""
        if not secret.startswith(TOKEN_PREFIX):
            return None
        # Looked up by its digest through the unique index: nothing compares the secret itself.
        return (
            cls.objects.select_related("user")
            .filter(token_hash=_digest(secret), revoked=None, user__is_active=True)
            .first()
        )

    def allows(self, needed: Scope) -> bool:
        return Scope(self.scope).allows(needed)

    def mark_used(self) -> None:
        self.last_used = timezone.now()
        # One UPDATE of one column: concurrent requests with the same token never clash.
        type(self).objects.filter(pk=self.pk).update(last_used=self.last_used)

    def revoke(self) -> None:
        self.revoked = timezone.now()
        self.save(update_fields=["revoked"])
