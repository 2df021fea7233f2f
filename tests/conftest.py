import io

import pytest
from django.core.management import call_command

from tests.devcluster import devcluster  # noqa: F401  (the local Slurm cluster, session-wide)


@pytest.fixture
def seeded(db):
    call_command("seed_guidance", stdout=io.StringIO())
    call_command("seed_templates", stdout=io.StringIO())


@pytest.fixture
def local_login(request, seeded, user):
    """The user's login on the dev cluster, registered as the cluster "local"."""
    from jobs.models import ClusterAccount

    request.getfixturevalue("devcluster")  # up, or skipped with its reason
    call_command("register_devcluster", user.username, stdout=io.StringIO())
    return ClusterAccount.objects.get(owner=user, cluster__slug="local")


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("alice", password="alice-password")


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
