import io

import pytest
from django.core.management import call_command

from tests.devcluster import devcluster, second_devcluster  # noqa: F401  (session-wide)

# The service a test needs, known from the fixtures it uses; `make test-fast` leaves these out
# (-m "not cluster and not browser and not service"). Test files that start Celery workers, Redis
# clients or manage.py processes mark themselves `service`.
MARKER_OF_FIXTURE = {
    "devcluster": "cluster",
    "second_devcluster": "cluster",
    "browser": "browser",
    "sshd": "service",
}


# tryfirst: `-m` deselects in a hook of this name, after the markers are given here.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture, marker in MARKER_OF_FIXTURE.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(marker)


@pytest.fixture
def seeded(db):
    call_command("seed_guidance", stdout=io.StringIO())
    call_command("seed_templates", stdout=io.StringIO())


@pytest.fixture
def local_login(devcluster, seeded, user):  # noqa: F811  (the imported fixture)
    """The user's login on the dev cluster, registered as the cluster "local"."""
    from jobs.models import ClusterAccount

    call_command("register_devcluster", user.username, stdout=io.StringIO())
    return ClusterAccount.objects.get(owner=user, cluster__slug="local")


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("alice", password="alice-password")


@pytest.fixture
def secret(user) -> str:
    """An API token of the user's, as its bearer sends it."""
    from portal.models import ApiToken

    return ApiToken.issue(user, "laptop")[1]


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_superuser("root", password="root-password")


@pytest.fixture
def user_client(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def staff_client(client, staff):
    client.force_login(staff)
    return client


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # Real hashing costs ~0.5 s per user on this machine; the hasher is not what tests check.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def no_history(settings):
    # Every test's login is the dev cluster's one user, whose accounting holds every earlier
    # test's jobs, which the history read would make the user's own: off unless a test reads it
    # (the `reads_history` fixture).
    settings.HISTORY_DAYS = 0


@pytest.fixture
def reads_history(settings):
    """The history read on, a new login's first read looking two minutes back."""
    settings.HISTORY_DAYS = 2 / (24 * 60)


@pytest.fixture(autouse=True)
def fresh_cache():
    # The API's rate counts live in the cache (this process's memory): each test starts at zero.
    from django.core.cache import cache

    cache.clear()
