"""A NUL character is refused in words, never a 500: PostgreSQL can neither store nor look up
such text (found on PostgreSQL by tests/test_api_fuzz.py). In a form it is an error beside its
field, with everything else typed kept; elsewhere the request is refused with 400."""

import pytest
from django import forms

from guidance.nul import MESSAGE as LAZY_MESSAGE
from jobs.compose.forms import ComposeForm
from jobs.models import Composition, NotificationDefaults
from portal.models import ApiToken
from portal.nul_guard import SAID
from tests.test_compose_page import GOOD

HTMX = {"HX-Request": "true"}
MESSAGE = str(LAZY_MESSAGE)
# Every field a user types or chooses in; ticked boxes send "on" whatever they hold, and the
# hidden results_default is the page's own (it follows the cluster).
COMPOSER_FIELDS = [
    name
    for name, field in ComposeForm.base_fields.items()
    if not isinstance(field, forms.BooleanField) and name != "results_default"
]


def _error_beside(page: str, name: str) -> str:
    """The error list the page shows under the field."""
    start = page.index(f'<ul class="errorlist" id="id_{name}_error">')
    return page[start : page.index("</ul>", start)]


def _with_nul(value: str) -> str:
    return f"{value or 'x'}\x00"


@pytest.mark.parametrize(
    "url",
    [
        "/jobs/?state=%00&cluster=%00",
        "/jobs/gpus/?x=%00",
        "/api/v1/clusters?x=%00",
        "/guidance/nar%00val/",
    ],
)
def test_a_nul_outside_a_form_is_refused_in_words(user_client, seeded, url):
    response = user_client.get(url)
    assert response.status_code == 400
    said = response.json()["detail"] if url.startswith("/api/") else response.content.decode()
    assert said == SAID  # the API's in its own shape: {"detail": ...}


@pytest.mark.parametrize("name", COMPOSER_FIELDS)
def test_save_and_submit_shows_a_nul_beside_its_field_and_keeps_the_rest(user_client, seeded, name):
    response = user_client.post(
        "/jobs/new/", GOOD | {name: _with_nul(GOOD.get(name, "")), "submit": "1"}
    )
    assert response.status_code == 200
    page = response.content.decode()
    error = _error_beside(page, name)
    if isinstance(ComposeForm.base_fields[name], forms.CharField | forms.ModelChoiceField):
        assert MESSAGE in error
    kept = {k: v for k, v in GOOD.items() if k != name and v and k not in ("cluster", "workload")}
    for key, value in kept.items():
        assert value.replace('"', "&quot;") in page, key
    assert Composition.objects.count() == 0


@pytest.mark.parametrize("name", COMPOSER_FIELDS)
def test_the_live_update_names_a_nul_beside_its_field(user_client, seeded, name):
    data = GOOD | {name: _with_nul(GOOD.get(name, "")), "live": "1", "reached": name}
    response = user_client.post("/jobs/new/", data, headers=HTMX)
    assert response.status_code == 200
    # Beside the field, swapped in out of band: the advice on the page stays as it was.
    assert f'hx-swap-oob="true"><ul class="errorlist" id="id_{name}_error">' in (
        response.content.decode()
    )


def test_a_nul_in_the_edited_script_is_named_beside_the_editor(user_client, seeded):
    data = GOOD | {"script_text": "#!/bin/bash\necho \x00\n", "composition_name": "Mine"}
    page = user_client.post("/jobs/new/", data | {"submit": "1"}).content.decode()
    assert MESSAGE in _error_beside(page, "script_text")
    assert 'name="composition_name" value="Mine"' in page
    assert Composition.objects.count() == 0
    answer = user_client.post("/jobs/new/", data | {"validate": "1"}, headers=HTMX)
    assert f"The script: {MESSAGE}" in answer.content.decode()  # nothing was sent to Slurm


def test_a_nul_in_the_name_to_save_as_is_named_beside_it(user_client, seeded):
    data = GOOD | {"composition_name": "My\x00run", "save": "1"}
    page = user_client.post("/jobs/new/", data).content.decode()
    assert MESSAGE in _error_beside(page, "composition_name")
    assert 'value="/project/def-someuser/data"' in page
    assert Composition.objects.count() == 0


def test_the_name_typed_to_save_as_stays_after_an_error(user_client, seeded):
    data = GOOD | {"command": "", "composition_name": "My run", "save": "1"}
    page = user_client.post("/jobs/new/", data).content.decode()
    assert 'name="composition_name" value="My run"' in page


@pytest.mark.parametrize("headers", [HTMX, {}])
def test_checking_a_path_with_a_nul_says_so(user_client, seeded, headers):
    data = GOOD | {"data_path": "/project/\x00", "check_path": "1"}
    url = "/jobs/new/check-path/" if headers else "/jobs/new/"
    response = user_client.post(url, data, headers=headers)
    assert response.status_code == 200
    assert MESSAGE in response.content.decode()


def test_a_composer_address_with_a_nul_is_an_error_not_a_500(user_client, seeded):
    assert user_client.get("/jobs/new/?template=%00").status_code == 404
    page = user_client.get("/jobs/new/?cluster=nar%00val&job_name=a").content.decode()
    assert MESSAGE in _error_beside(page, "cluster")
    assert user_client.get("/jobs/gpus/brief/?cluster=%00").status_code == 400


@pytest.mark.parametrize(
    ("data", "name"),
    [
        ({"cluster": "narval", "script": "#!/bin/bash\necho \x00\n"}, "script"),
        ({"cluster": "nar\x00val", "script": "#!/bin/bash\necho hi\n"}, "cluster"),
    ],
)
@pytest.mark.parametrize("url", ["/jobs/check/", "/jobs/check/fixed/"])
def test_the_script_checker_names_a_nul_beside_its_field(user_client, seeded, url, data, name):
    response = user_client.post(url, data)
    assert response.status_code == 200
    page = response.content.decode()
    assert MESSAGE in _error_beside(page, name)
    assert "echo " in page  # the script stays in its box


@pytest.mark.parametrize(
    ("data", "name"),
    [
        ({"code-program": "import torch\x00\n"}, "code-program"),
        ({"code-file_name": "train\x00.py", "code-program": "import torch\n"}, "code-file_name"),
        ({"code-cluster": "nar\x00val", "code-program": "import torch\n"}, "code-cluster"),
    ],
)
def test_the_code_checker_names_a_nul_beside_its_field(user_client, seeded, data, name):
    script = {"cluster": "narval", "script": "#!/bin/bash\n", "code-cluster": "narval"}
    response = user_client.post("/jobs/check/code/", script | data)
    assert response.status_code == 200
    assert MESSAGE in _error_beside(response.content.decode(), name)


def test_a_token_name_with_a_nul_is_named_beside_it(user_client, seeded, user):
    response = user_client.post("/settings/tokens/", {"name": "lap\x00top"})
    assert response.status_code == 200
    assert MESSAGE in _error_beside(response.content.decode(), "name")
    assert not ApiToken.objects.filter(user=user).exists()


def test_an_address_with_a_nul_is_named_beside_it_and_the_switches_stay(user_client, user):
    data = {"email": "me@example.org\x00", "on_start": "on"}
    response = user_client.post("/jobs/notifications/settings/", data)
    page = response.content.decode()
    assert MESSAGE in _error_beside(page, "email")
    assert 'name="on_start" id="id_on_start" checked' in page
    assert not NotificationDefaults.objects.filter(owner=user, on_start=True).exists()


def test_the_advice_form_names_a_nul_beside_its_field(user_client, seeded):
    query = {"workload": "training", "dataset_gb": "5\x00", "hours": "2", "gpu_count": "1"}
    response = user_client.get("/guidance/narval/advice/", query | {"nodes": "1"})
    assert response.status_code == 200
    assert _error_beside(response.content.decode(), "dataset_gb")


def test_the_usage_report_names_a_nul_in_the_cluster(client, seeded, staff):
    client.force_login(staff)
    response = client.get("/jobs/usage/", {"cluster": "nar\x00val"})
    assert response.status_code == 400  # as for any value it cannot report on
    assert f'href="#id_cluster">Cluster</a>: {MESSAGE}' in response.content.decode()


def test_a_nul_in_the_api_s_json_is_a_422_on_its_field(client, seeded, user):
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
