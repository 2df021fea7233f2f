"""Admins import a cluster's GPU partitions from Slurm itself: shown first, saved on confirm."""

import io

import pytest
from django.core.management import call_command

from guidance.models import Cluster, Partition
from jobs.cluster import keys
from jobs.models import ClusterAccount


@pytest.fixture
def local(devcluster, seeded, staff) -> Cluster:
    """The local cluster registered for the admin, then its partitions forgotten."""
    call_command("register_devcluster", staff.username, stdout=io.StringIO())
    cluster = Cluster.objects.get(slug="local")
    cluster.partitions.all().delete()
    return cluster


def _url(cluster: Cluster) -> str:
    return f"/admin/clusters/{cluster.pk}/import-partitions/"


def test_it_shows_slurms_partitions_before_saving_them(staff_client, local):
    page = staff_client.get(_url(local)).content.decode()
    assert "gpu-a100" in page and "gpu-rtx" in page and "new" in page
    assert not Partition.objects.filter(cluster=local).exists()


def test_confirming_imports_them(staff_client, local):
    response = staff_client.post(_url(local), follow=True)
    assert "Imported 2 GPU partition(s) from Slurm: gpu-a100, gpu-rtx" in response.content.decode()
    a100 = Partition.objects.get(cluster=local, name="gpu-a100")
    assert (a100.gpu_type.name, a100.gpus_per_node, a100.max_hours) == ("a100", 2, 1)


def test_the_cluster_page_links_to_it(staff_client, local):
    page = staff_client.get(f"/admin/guidance/cluster/{local.pk}/change/").content.decode()
    assert _url(local) in page


def test_an_admin_without_a_login_there_is_told_to_make_one(staff_client, local, staff):
    ClusterAccount.objects.filter(owner=staff).delete()
    response = staff_client.get(_url(local), follow=True)
    said = "under “Cluster logins” in the portal first: importing reads Slurm through it"
    assert said in response.content.decode()


def test_an_unreachable_cluster_is_said_in_plain_words(staff_client, local):
    local.login_port = 1  # nothing listens there
    local.save()
    response = staff_client.get(_url(local), follow=True)
    assert "Could not read the partitions: The portal could not reach" in response.content.decode()


def test_non_staff_cannot_import(user_client, local):
    response = user_client.post(_url(local))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert not Partition.objects.filter(cluster=local).exists()


def test_the_private_key_never_shows(staff_client, local, staff):
    account = ClusterAccount.objects.get(owner=staff, cluster=local)
    secret = keys.decrypt(account.private_key_encrypted).splitlines()[1]
    assert secret not in staff_client.get(_url(local)).content.decode()
