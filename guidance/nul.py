"""NUL characters, which PostgreSQL can neither store nor look up (a query holding one fails).

Django's CharField refuses them beside the field; what reads a value before its field cleans it
(a choice looked up by slug, a value read from request.POST) refuses them here. A view whose
every value goes through such a check says so with `checks_nul_per_field`, and the middleware
(portal.nul_guard) leaves the refusal to it, so that the page comes back with the error beside
the field and all else the user typed, not a bare 400.
"""

from collections.abc import Callable

from django.core.validators import ProhibitNullCharactersValidator

NUL = "\x00"
refuse_nul = ProhibitNullCharactersValidator()  # raises ValidationError, code null_characters
MESSAGE = refuse_nul.message


def holds_nul(*values: str | None) -> bool:
    return any(value and NUL in value for value in values)


def checks_nul_per_field[V: Callable](view: V) -> V:
    view.checks_nul_per_field = True  # type: ignore[attr-defined]
    return view
