"""Read settings from the environment, failing loudly on a missing or malformed value.

An empty variable counts as unset, so `NAME=` in an env file means "use the default".
"""

import os
from collections.abc import Iterable, Sequence
from enum import Enum
from typing import Final, overload

from django.core.exceptions import ImproperlyConfigured


class _Required(Enum):
    # An enum member rather than object() so that type checkers can narrow it away.
    REQUIRED = "REQUIRED"


REQUIRED: Final = _Required.REQUIRED

# Ordered as pairs so that the error message reads true/false/1/0/yes/no/on/off.
_BOOLS = {
    "true": True,
    "false": False,
    "1": True,
    "0": False,
    "yes": True,
    "no": False,
    "on": True,
    "off": False,
}


def _raw(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def _missing(name: str, hint: str) -> ImproperlyConfigured:
    message = f"{name} is not set and has no default; set it in the environment."
    return ImproperlyConfigured(f"{message} {hint}" if hint else message)


@overload
def env_str(name: str, default: str | _Required = ..., *, hint: str = "") -> str: ...
@overload
def env_str(name: str, default: None, *, hint: str = "") -> str | None: ...
def env_str(name: str, default: str | _Required | None = REQUIRED, *, hint: str = "") -> str | None:
    value = _raw(name)
    if value is not None:
        return value
    if default is REQUIRED:
        raise _missing(name, hint)
    return default


def env_bool(name: str, default: bool) -> bool:
    value = _raw(name)
    if value is None:
        return default
    try:
        return _BOOLS[value.lower()]
    except KeyError:
        allowed = "/".join(_BOOLS)
        raise ImproperlyConfigured(f"{name} must be one of {allowed}, got {value!r}") from None


def env_int(
    name: str,
    default: int | _Required = REQUIRED,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int:
    value = _raw(name)
    if value is None:
        if default is REQUIRED:
            raise _missing(name, "")
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from None
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        low = "" if minimum is None else f"at least {minimum}"
        high = "" if maximum is None else f"at most {maximum}"
        bounds = " and ".join(part for part in (low, high) if part)
        raise ImproperlyConfigured(f"{name} must be {bounds}, got {number}")
    return number


def env_list(name: str, default: Iterable[str] = ()) -> list[str]:
    value = _raw(name)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def env_choice(name: str, choices: Sequence[str], default: str) -> str:
    value = env_str(name, default)
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {'/'.join(choices)}, got {value!r}")
    return value
