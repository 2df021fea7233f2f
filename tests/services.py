"""What a test does when a service it needs is missing: skip with the reason, or fail in CI."""

import os

import pytest


def service_missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI must run this test)")
    pytest.skip(reason)
