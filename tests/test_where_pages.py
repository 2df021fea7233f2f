""" "Where should this run?" on the composer and in the API. The seeded clusters cannot be
reached from here: each start is unknown, said within the budget, and the rest of the ranking
(fits, node type, GPU-hours) stands."""

import re
import time
from urllib.parse import parse_qs, urlparse

import pytest
from django.contrib.auth import get_user_model

from portal.models import ApiToken
from tests.test_compose_page import GOOD
from tests.test_where import LONG, _login

HTMX = {"HX-Request": "true"}


@pytest.fixture(autouse=True)
def short_budget(settings):
    settings.SOONER_BUDGET_SECONDS = 2


@pytest.fixture
def logins(seeded, user):
    return {slug: _login(user, slug) for slug in ("narval", "graham")}


@pytest.fixture
def headers(user):
    return {"Authorization": f"Bearer {ApiToken.issue(user, 'cli')[1]}"}


def _rows(page: str) -> list[str]:
    return re.findall(r'<tr data-cluster="([\w-]+)"', page)


def test_the_composer_offers_the_button(user_client, seeded):
    page = user_client.get("/jobs/new/").content.decode()
    assert "Where should this run?" in page and 'hx-post="/jobs/new/where/"' in page


def test_htmx_gets_the_ranking_alone_fits_first(user_client, logins):
    began = time.monotonic()
    response = user_client.post("/jobs/new/where/", LONG, headers=HTMX)
    assert time.monotonic() - began < 10
    page = response.content.decode()
    assert "<html" not in page
    assert _rows(page) == ["graham", "narval"]  # Narval's a100 nodes take 7 days at most
    assert 'class="does-not-fit"' in page and "unknown" in page


def test_without_javascript_a_get_page_works(user_client, logins):
    page = user_client.get("/jobs/new/where/", LONG).content.decode()
    assert "<h1>Where should this run?</h1>" in page and _rows(page) == ["graham", "narval"]


def test_a_user_without_logins_is_told_how_to_add_one(user_client, seeded):
    page = user_client.post("/jobs/new/where/", LONG, headers=HTMX).content.decode()
    assert "add a login" in page and not _rows(page)


def test_other_users_logins_are_not_listed(user_client, logins):
    bob = get_user_model().objects.create_user("bob", password="x")
    _login(bob, "cedar", "bob")
    page = user_client.post("/jobs/new/where/", LONG, headers=HTMX).content.decode()
    assert "cedar" not in _rows(page)


def test_composing_it_there_moves_the_fields_and_says_what_changed(user_client, logins):
    page = user_client.post("/jobs/new/where/", LONG, headers=HTMX).content.decode()
    link = re.search(r'href="(/jobs/new/where/go/\?to=graham[^"]*)"', page)[1].replace("&amp;", "&")
    response = user_client.get(link, follow=True)
    landed = response.redirect_chain[-1][0]
    query = parse_qs(urlparse(landed).query)
    assert query["cluster"] == ["graham"] and query["hours"] == ["200"]
    assert "account" not in query or query["account"] == [""]
    shown = response.content.decode()
    assert "now composed for Graham" in shown
    assert "no a100 GPUs" in shown and "Account def-someuser" in shown
    assert 'value="graham" selected' in shown


def test_it_does_not_move_to_a_cluster_without_a_login_of_theirs(user_client, logins):
    assert user_client.get("/jobs/new/where/go/", GOOD | {"to": "cedar"}).status_code == 404


def test_the_api_ranks_the_logins(client, logins, headers):
    job = {
        "cluster": "narval",
        "workload": "training",
        "dataset_gb": 50,
        "hours": 200,
        "gpu_type": "a100",
        "job_name": "resnet",
        "account": "def-someuser",
        "data_path": "/project/def-someuser/data",
        "results_dir": "$HOME/results",
        "modules": ["python/3.11", "cuda"],
        "command": "python train.py",
    }
    response = client.post("/api/v1/where", job, content_type="application/json", headers=headers)
    assert response.status_code == 200, response.content
    ranking = response.json()["ranking"]
    assert [p["cluster"] for p in ranking] == ["graham", "narval"]
    graham, narval = ranking
    assert graham["fits"] and graham["gpu_hours"] > 0 and graham["partition"]
    assert graham["start"] is None and graham["start_problem"]
    assert not narval["fits"] and narval["why_not"]
    assert any("a100" in change for change in graham["changes"])


def test_the_api_refuses_bad_input_and_no_token(client, logins, headers):
    url = "/api/v1/where"
    assert client.post(url, {}, content_type="application/json").status_code == 401
    bad = client.post(url, {"hours": "x"}, content_type="application/json", headers=headers)
    assert bad.status_code == 422 and bad.json()["detail"]


def test_the_schema_documents_it(client):
    schema = client.get("/api/v1/openapi.json").json()
    assert "post" in schema["paths"]["/api/v1/where"]
    place = schema["components"]["schemas"]["PlaceOut"]["properties"]
    assert {"fits", "why_not", "partition", "gpu_type", "gpu_hours", "start", "free_gpus"} <= set(
        place
    )


def test_without_javascript_the_composers_button_posts_to_a_page(user_client, logins):
    page = user_client.post("/jobs/new/where/", LONG | {"where": "1"}).content.decode()
    assert "<h1>Where should this run?</h1>" in page and _rows(page) == ["graham", "narval"]


def test_a_nul_character_is_refused_in_words(user_client, logins):
    response = user_client.get("/jobs/new/where/go/", {"to": "graham\x00"})
    assert response.status_code == 400 and "NUL" in response.content.decode().upper()
    response = user_client.post("/jobs/new/where/", LONG | {"command": "a\x00b"}, headers=HTMX)
    assert response.status_code == 400
