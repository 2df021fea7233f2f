import pytest
from django.core.exceptions import ImproperlyConfigured

from portal.env import env_bool, env_choice, env_int, env_list, env_str
from tests.processes import portal_env, python

NAME = "PORTAL_TEST_VARIABLE"
SETUP = "import django; django.setup(); from django.conf import settings; "


@pytest.fixture(autouse=True)
def _unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(NAME, raising=False)


def test_env_str_returns_the_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NAME, " hello ")
    assert env_str(NAME) == "hello"


@pytest.mark.parametrize("value", [None, "", "  "])
def test_env_str_uses_the_default_when_unset_or_empty(
    monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is not None:
        monkeypatch.setenv(NAME, value)
    assert env_str(NAME, "fallback") == "fallback"
    assert env_str(NAME, None) is None


def test_env_str_names_a_missing_required_variable() -> None:
    with pytest.raises(ImproperlyConfigured, match=f"^{NAME} is not set and has no default"):
        env_str(NAME)


def test_env_str_adds_the_hint() -> None:
    with pytest.raises(ImproperlyConfigured, match=r"Ask the operator\.$"):
        env_str(NAME, hint="Ask the operator.")


@pytest.mark.parametrize("value", ["true", "TRUE", "1", "yes", "on"])
def test_env_bool_accepts_true(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(NAME, value)
    assert env_bool(NAME, False) is True


@pytest.mark.parametrize("value", ["false", "False", "0", "no", "off"])
def test_env_bool_accepts_false(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(NAME, value)
    assert env_bool(NAME, True) is False


def test_env_bool_uses_the_default_when_unset() -> None:
    assert env_bool(NAME, True) is True
    assert env_bool(NAME, False) is False


def test_env_bool_names_the_variable_and_the_bad_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NAME, "maybe")
    with pytest.raises(ImproperlyConfigured) as raised:
        env_bool(NAME, False)
    assert str(raised.value) == f"{NAME} must be one of true/false/1/0/yes/no/on/off, got 'maybe'"


def test_env_int_parses(monkeypatch: pytest.MonkeyPatch) -> None:
    assert env_int(NAME, 8000) == 8000
    monkeypatch.setenv(NAME, "8001")
    assert env_int(NAME, 8000) == 8001


def test_env_int_names_the_variable_and_the_bad_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NAME, "80x")
    with pytest.raises(ImproperlyConfigured) as raised:
        env_int(NAME, 8000)
    assert str(raised.value) == f"{NAME} must be an integer, got '80x'"


def test_env_int_keeps_to_its_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NAME, "0")
    with pytest.raises(ImproperlyConfigured) as raised:
        env_int(NAME, 10, minimum=1, maximum=3600)
    assert str(raised.value) == f"{NAME} must be at least 1 and at most 3600, got 0"
    monkeypatch.setenv(NAME, "3601")
    with pytest.raises(ImproperlyConfigured, match=r"at most 3600, got 3601$"):
        env_int(NAME, 10, maximum=3600)
    monkeypatch.setenv(NAME, "3600")
    assert env_int(NAME, 10, minimum=1, maximum=3600) == 3600


def test_env_int_names_a_missing_required_variable() -> None:
    with pytest.raises(ImproperlyConfigured, match=f"^{NAME} is not set"):
        env_int(NAME)


def test_env_list_splits_on_commas(monkeypatch: pytest.MonkeyPatch) -> None:
    assert env_list(NAME, ["a"]) == ["a"]
    monkeypatch.setenv(NAME, " example.org, .example.com ,,")
    assert env_list(NAME) == ["example.org", ".example.com"]


def test_env_choice_names_the_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    assert env_choice(NAME, ["INFO", "DEBUG"], "INFO") == "INFO"
    monkeypatch.setenv(NAME, "LOUD")
    with pytest.raises(ImproperlyConfigured) as raised:
        env_choice(NAME, ["INFO", "DEBUG"], "INFO")
    assert str(raised.value) == f"{NAME} must be one of INFO/DEBUG, got 'LOUD'"


# The settings module runs once per process, so these load it in a fresh interpreter each time.


def test_settings_refuse_production_without_secret_key(tmp_path) -> None:
    result = python(portal_env(tmp_path, DEBUG="false"), SETUP)
    assert result.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY is not set" in result.stderr
    assert "It is required when DEBUG is false" in result.stderr
    assert "secrets.token_urlsafe" in result.stderr


def test_settings_load_in_debug_with_the_development_key(tmp_path) -> None:
    code = SETUP + "print(settings.DEBUG, settings.SECRET_KEY)"
    result = python(portal_env(tmp_path, DEBUG="true"), code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "True",
        "django-insecure-development-only-never-use-in-production",
    ]


def test_settings_load_in_production_with_a_secret_key(tmp_path) -> None:
    code = SETUP + "print(settings.DEBUG, settings.SESSION_COOKIE_SECURE, settings.ALLOWED_HOSTS)"
    env = portal_env(
        tmp_path,
        DEBUG="false",
        SECRET_KEY="s" * 50,
        PORTAL_ENCRYPTION_KEY="Y29sbGVjdHN0YXRpYy1vbmx5LW5vdC1yZWFsLWtleSE=",
        ALLOWED_HOSTS="gpu.example.org",
    )
    result = python(env, code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False True ['gpu.example.org']"


def test_settings_name_a_malformed_variable(tmp_path) -> None:
    result = python(portal_env(tmp_path, DEBUG="maybe"), SETUP)
    assert result.returncode != 0
    assert "DEBUG must be one of true/false/1/0/yes/no/on/off, got 'maybe'" in result.stderr


def test_settings_keep_database_passwords_out_of_errors(tmp_path) -> None:
    result = python(portal_env(tmp_path, DATABASE_URL="nosuchdb://u:hunter2@db/portal"), SETUP)
    assert result.returncode != 0
    assert "DATABASE_URL is not a database URL" in result.stderr
    assert "hunter2" not in result.stderr
