"""The cluster logins page for a cluster that takes no logins yet: it says why and who can fix it,
and where the compositions that "Save and submit" kept are."""

import html

import pytest

from guidance.models import Cluster
from jobs.cluster import keys
from jobs.models import Composition
from tests.test_compose_page import GOOD

PAGE = "/jobs/logins/"


def _page(client) -> str:
    return html.unescape(client.get(PAGE).content.decode())


@pytest.fixture
def narval(seeded) -> Cluster:
    return Cluster.objects.get(slug="narval")


def test_it_says_why_a_cluster_takes_no_login_yet(user_client, narval):
    assert narval.login_host and not narval.host_key
    page = _page(user_client)
    assert "You cannot add a login on Narval yet" in page
    assert f"no admin has confirmed the host key of {narval.login_host} yet" in page
    assert "Ask the portal's admins to confirm it" in page
    assert f"/jobs/logins/{narval.slug}/key/" not in page  # no form that could only fail
    assert "/admin/" not in page


def test_it_links_staff_to_the_host_key_page(staff_client, narval):
    page = _page(staff_client)
    assert f'href="/admin/clusters/{narval.pk}/host-key/"' in page
    assert "Check and confirm its host key" in page


def test_it_sends_staff_to_the_cluster_when_it_has_no_login_host(staff_client, narval):
    narval.login_host = ""
    narval.save()
    page = _page(staff_client)
    assert "no login host is registered for it" in page
    assert f'href="/admin/guidance/cluster/{narval.pk}/change/">Set its login host' in page


def test_it_tells_users_what_to_ask_for_when_there_is_no_login_host(user_client, narval):
    narval.login_host = ""
    narval.save()
    page = _page(user_client)
    assert "Ask the portal's admins to register its login host and confirm its key" in page


def test_a_confirmed_host_key_offers_the_key(user_client, narval):
    narval.host_key = keys.generate_keypair().public_line
    narval.save()
    page = _page(user_client)
    assert f"/jobs/logins/{narval.slug}/key/" in page
    assert "You cannot add a login on Narval yet" not in page


def test_save_and_submit_without_a_login_says_where_the_composition_is(user_client, narval):
    response = user_client.post("/jobs/new/", GOOD | {"submit": "1"}, follow=True)
    page = html.unescape(response.content.decode())
    composition = Composition.objects.get()
    assert response.redirect_chain[-1][0] == PAGE
    assert "You cannot add a login on Narval yet" in page
    assert f'<a href="{composition.get_absolute_url()}">{composition.name}</a>' in page
    assert 'under <a href="/jobs/compositions/">My compositions</a>' in page


def test_it_lists_only_this_users_compositions_for_that_cluster(user_client, user, staff, narval):
    Composition.objects.create(owner=user, name="on narval", fields={"cluster": "narval"})
    Composition.objects.create(owner=user, name="on cedar", fields={"cluster": "cedar"})
    Composition.objects.create(owner=staff, name="not mine", fields={"cluster": "narval"})
    page = _page(user_client)
    narval_section = page.split("<h2>Narval", 1)[1].split("</section>", 1)[0]
    assert ">on narval</a>" in narval_section
    assert "on cedar" not in narval_section
    assert "not mine" not in page
