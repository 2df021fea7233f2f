import pytest
from django.contrib.auth.models import User
from django.contrib.staticfiles import finders
from django.test import Client
from django.urls import reverse

PASSWORD = "correct-horse-battery-staple"


@pytest.fixture
def alice(django_user_model: type[User]) -> User:
    return django_user_model.objects.create_user("alice", password=PASSWORD)


@pytest.fixture
def operator(django_user_model: type[User]) -> User:
    return django_user_model.objects.create_user("operator", password=PASSWORD, is_staff=True)


def test_it_sends_anonymous_visitors_to_login(client: Client, db: None) -> None:
    response = client.get("/jobs/")
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next=/jobs/"


def test_it_shows_the_login_error_and_keeps_the_username(client: Client, alice: User) -> None:
    response = client.post(reverse("login"), {"username": "alice", "password": "wrong"})
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.text
    assert 'value="alice"' in response.text
    assert "_auth_user_id" not in client.session


def test_a_user_logs_in_and_out(client: Client, alice: User) -> None:
    response = client.post(reverse("login"), {"username": "alice", "password": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == reverse("home")

    home = client.get(reverse("home"))
    assert home.status_code == 200
    assert "alice" in home.text
    assert f'action="{reverse("logout")}"' in home.text

    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert response["Location"] == reverse("login")
    assert "alice" not in client.get(reverse("home")).text


def test_logout_rejects_get(client: Client, alice: User) -> None:
    client.force_login(alice)
    assert client.get(reverse("logout")).status_code == 405
    assert client.get(reverse("home")).status_code == 200


def test_staff_reach_the_admin(client: Client, operator: User) -> None:
    client.force_login(operator)
    response = client.get("/admin/")
    assert response.status_code == 200
    assert "GPU portal administration" in response.text


def test_it_sends_non_staff_to_the_admin_login(client: Client, alice: User) -> None:
    client.force_login(alice)
    response = client.get("/admin/")
    assert response.status_code == 302
    assert response["Location"] == "/admin/login/?next=/admin/"


def test_home_links_staff_to_the_admin(client: Client, alice: User, operator: User) -> None:
    client.force_login(alice)
    assert reverse("admin:index") not in client.get(reverse("home")).text
    client.force_login(operator)
    assert reverse("admin:index") in client.get(reverse("home")).text


def test_healthz_says_ok_without_login(client: Client) -> None:
    response = client.get("/healthz/")
    assert response.status_code == 200
    assert response.content == b"ok"
    assert response["Content-Type"].startswith("text/plain")


def test_the_pages_name_an_icon_that_is_served(client: Client, alice: User) -> None:
    html = client.get(reverse("login")).content.decode()
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in html
    assert finders.find("favicon.svg")
    # Asked for by its old name, it is found too.
    answer = client.get("/favicon.ico")
    assert answer.status_code == 301 and answer["Location"] == "/static/favicon.svg"
