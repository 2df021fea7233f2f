"""A NUL character in any address or form value is refused with 400 and words, never a 500:
PostgreSQL cannot look such text up (found on PostgreSQL by tests/test_api_fuzz.py)."""

import pytest

from portal.nul_guard import SAID


@pytest.mark.parametrize(
    "url",
    [
        "/jobs/?state=%00&cluster=%00",
        "/jobs/new/?template=%00",
        "/jobs/new/?cluster=%00&job_name=a",
        "/guidance/narval/advice/?workload=%00",
        "/api/v1/clusters?x=%00",
    ],
)
def test_a_nul_in_the_address_is_refused_in_words(user_client, seeded, url):
    response = user_client.get(url)
    assert response.status_code == 400
    said = response.json()["detail"] if url.startswith("/api/") else response.content.decode()
    assert said == SAID  # the API's in its own shape: {"detail": ...}


def test_a_nul_in_a_posted_form_is_refused_in_words(user_client, seeded):
    response = user_client.post("/jobs/new/", {"cluster": "narval", "command": "python\x00"})
    assert (response.status_code, response.content.decode()) == (400, SAID)


def test_a_nul_in_the_api_s_json_is_a_422_on_its_field(client, seeded, user):
    from portal.models import ApiToken

    headers = {"Authorization": f"Bearer {ApiToken.issue(user, 'cli')[1]}"}
    job = {"cluster": "nar\x00val", "workload": "training", "dataset_gb": 5, "hours": 2}
    response = client.post(
        "/api/v1/recommendation", job, content_type="application/json", headers=headers
    )
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error == {
        "field": "cluster",
        "code": "null_characters",
        "message": "Null characters are not allowed.",
    }
