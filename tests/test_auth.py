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


def test_the_password_change_page_is_the_portals_and_in_the_menu(client: Client, alice: User):
    client.force_login(alice)
    assert f'href="{reverse("password_change")}"' in client.get(reverse("home")).text
    page = client.get(reverse("password_change")).text
    assert "<h1>Change your password</h1>" in page
    assert 'class="site-header"' in page
    assert "Django administration" not in page and "admin" not in page.lower().split("<main")[1]


def test_it_changes_the_password_and_says_so_in_the_portals_look(client: Client, alice: User):
    client.force_login(alice)
    new = "another-horse-battery-staple"
    form = {"old_password": PASSWORD, "new_password1": new, "new_password2": new}
    response = client.post(reverse("password_change"), form, follow=True)
    assert response.redirect_chain[-1][0] == reverse("password_change_done")
    assert "<h1>Password changed</h1>" in response.text
    assert 'class="site-header"' in response.text
    alice.refresh_from_db()
    assert alice.check_password(new)


def test_it_shows_a_wrong_current_password(client: Client, alice: User) -> None:
    client.force_login(alice)
    form = {"old_password": "wrong", "new_password1": "x-y-z-w-v", "new_password2": "x-y-z-w-v"}
    response = client.post(reverse("password_change"), form)
    assert response.status_code == 200
    assert "Your old password was entered incorrectly" in response.text
    alice.refresh_from_db()
    assert alice.check_password(PASSWORD)


def test_every_page_links_to_the_api_docs(client: Client, alice: User) -> None:
    docs = reverse("api:openapi-view")
    assert f'href="{docs}"' in client.get(reverse("login")).text
    client.force_login(alice)
    assert f'href="{docs}"' in client.get(reverse("home")).text
    assert client.get(docs).status_code == 200
