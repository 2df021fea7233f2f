"""`manage.py check --deploy` in production mode: every setting it asks for comes from the
environment, and with them set it finds nothing."""

import secrets

from cryptography.fernet import Fernet

from tests.processes import manage, portal_env

HARDENED = {
    "SECURE_SSL_REDIRECT": "true",
    "TRUST_X_FORWARDED_PROTO": "true",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
    "EMAIL_BACKEND": "smtp",  # the console, the default, sends nothing
}


def _check(tmp_path, **settings: str):
    env = portal_env(
        tmp_path,
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(50),
        PORTAL_ENCRYPTION_KEY=Fernet.generate_key().decode(),
        ALLOWED_HOSTS="portal.example.org",
        **settings,
    )
    return manage(env, "check", "--deploy", "--fail-level", "WARNING")


def test_check_deploy_is_clean_with_the_settings_from_the_environment(tmp_path):
    result = _check(tmp_path, **HARDENED)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_without_them_check_deploy_names_what_to_set(tmp_path):
    result = _check(tmp_path)
    assert result.returncode != 0
    said = result.stdout + result.stderr
    assert "security.W004" in said  # HSTS
    assert "security.W008" in said  # the redirect to HTTPS
    assert "mail.E001" in said  # e-mail printed on the console, not sent
