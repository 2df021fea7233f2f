"""What a test does when a service it needs is missing: skip with the reason, or fail in CI."""

import os

import pytest


def service_missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI must run this test)")
    pytest.skip(reason)


def need_postgresql_for_workers() -> None:
    """A worker in another process must share the test database and wait on its locks."""
    from django.db import connection

    if connection.vendor != "postgresql":
        service_missing(
            "a worker in another process must share the test database and wait on its locks: "
            "run with DATABASE_URL=postgres://... (CI does)"
        )
