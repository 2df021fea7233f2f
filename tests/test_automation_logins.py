"""A login through an automation node, as the user sets it up: the choice on the logins page, the
key line with the wrapper as its forced command (and the portal's addresses), and the wrapper to
install, downloaded from the portal."""

import html

import pytest

from guidance.models import Cluster
from jobs.cluster import keys
from jobs.models import ClusterAccount

PAGE = "/jobs/logins/"


@pytest.fixture
def account(user, seeded) -> ClusterAccount:
    cluster = Cluster.objects.get(slug="narval")
    cluster.host_key = keys.generate_keypair().public_line
    cluster.automation_host = "robot.narval.example.org"
    cluster.save()
    pair = keys.generate_keypair()
    return ClusterAccount.objects.create(
        owner=user,
        cluster=cluster,
        username="alice",
        public_key=pair.public_line,
        private_key_encrypted=keys.encrypt(pair.private_pem),
    )


def _page(client) -> str:
    return html.unescape(client.get(PAGE).content.decode())


def test_the_ordinary_login_gets_a_plain_restricted_line(user_client, account):
    page = _page(user_client)
    assert f"restrict {account.public_key}" in page
    assert "command=" not in page


def test_through_the_automation_node_the_key_runs_only_the_wrapper(user_client, account, settings):
    settings.PORTAL_SSH_FROM = ["203.0.113.7"]
    response = user_client.post(
        f"/jobs/logins/{account.pk}/route/", {"through_automation_node": "on"}, follow=True
    )
    assert response.status_code == 200
    account.refresh_from_db()
    assert account.through_automation_node
    page = _page(user_client)
    line = f'restrict,from="203.0.113.7",command="$HOME/bin/portal-remote" {account.public_key}'
    assert line in page
    assert "robot.narval.example.org:22" in page
    assert "cat > ~/bin/portal-remote" in page
    user_client.post(f"/jobs/logins/{account.pk}/route/", {})
    account.refresh_from_db()
    assert not account.through_automation_node


def test_nobody_else_sets_the_route_of_a_login(client, django_user_model, account):
    client.force_login(django_user_model.objects.create_user("mallory", password="x-password"))
    response = client.post(f"/jobs/logins/{account.pk}/route/", {"through_automation_node": "on"})
    assert response.status_code == 404
    account.refresh_from_db()
    assert not account.through_automation_node


def test_the_wrapper_downloads_as_the_file_the_project_ships(user_client):
    response = user_client.get("/jobs/logins/portal-remote")
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="portal-remote"'
    assert response.content.startswith(b"#!/usr/bin/env python3\n")
    assert b"SSH_ORIGINAL_COMMAND" in response.content


@pytest.mark.parametrize("command", ['x" y', "a\nb"])
def test_a_forced_command_cannot_break_out_of_its_quotes(command):
    with pytest.raises(ValueError, match="double quote or a line break"):
        keys.authorized_keys_line(keys.generate_keypair().public_line, command=command)


def test_a_bad_portal_address_setting_leaves_the_line_without_from(user_client, account, settings):
    settings.PORTAL_SSH_FROM = ["203.0.113.7; rm -rf ~"]
    page = _page(user_client)
    assert f"restrict {account.public_key}" in page
    assert "rm -rf" not in page
