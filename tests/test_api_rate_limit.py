"""A token over API_RATE_LIMIT is answered 429 with Retry-After; other tokens are not."""

from portal.models import ApiToken

URL = "/api/v1/clusters"


def _get(client, secret: str):
    return client.get(URL, headers={"Authorization": f"Bearer {secret}"})


def test_a_token_over_its_rate_waits_as_retry_after_says(client, seeded, user, settings):
    settings.API_RATE_LIMIT = "3/min"
    _, secret = ApiToken.issue(user, "script")
    assert [_get(client, secret).status_code for _ in range(3)] == [200, 200, 200]
    over = _get(client, secret)
    assert over.status_code == 429
    assert 0 < int(over["Retry-After"]) <= 60
    assert over.json() == {
        "detail": "This token is over its rate of 3/min requests: wait as Retry-After says."
    }
    _, other = ApiToken.issue(user, "laptop")
    assert _get(client, other).status_code == 200


def test_a_missing_token_is_refused_before_any_rate_is_counted(client, seeded, settings):
    settings.API_RATE_LIMIT = "1/min"
    assert [client.get(URL).status_code for _ in range(3)] == [401, 401, 401]
