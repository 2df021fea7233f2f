"""Schemathesis fuzzes the JSON API from its own OpenAPI schema: generated requests, valid and
not, to every endpoint, with a valid token. No answer may be a server error, and every answer must
be as the schema documents it (status, content type, body)."""

import pytest
import schemathesis
from django.core import signals
from django.core.management import call_command
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from portal.models import ApiToken
from portal.wsgi import application

schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", application)


@pytest.fixture
def token_headers(db, user, settings):
    settings.API_RATE_LIMIT = "100000/min"  # the fuzzer is one client sending many requests
    call_command("seed_guidance", verbosity=0)
    return {"Authorization": f"Bearer {ApiToken.issue(user, 'fuzz')[1]}"}


@pytest.fixture(autouse=True)
def _one_connection_for_the_test():
    # Schemathesis calls the WSGI app itself, whose end-of-request handler closes the database
    # connection: the test's transaction (and, on PostgreSQL, every later request) would go with
    # it. Django's own test client leaves the connection open in the same way.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_every_generated_request_is_answered_as_documented(case, token_headers):
    # Not "schema-valid data is accepted": the engine refuses what no static schema can say (a
    # cluster that does not exist, a GPU type the cluster lacks, more hours than its partitions
    # allow), as 422 with the field; the other checks still hold those answers to the schema.
    excluded = [positive_data_acceptance]
    if case.operation.label == "GET /api/v1/jobs":
        # Its "invalid" queries include an unknown parameter whose value serializes to nothing (an
        # empty list), so that the request sent is valid and listed. Unknown parameters are
        # refused: tests/test_api_jobs.py, test_a_bad_filter_is_refused.
        excluded.append(negative_data_rejection)
    case.call_and_validate(headers=token_headers, excluded_checks=excluded)
