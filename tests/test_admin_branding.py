"""Every admin page reads as the portal's, the pages the portal adds to the admin included."""

import pytest

from guidance.models import Cluster
from jobs.cluster import remote
from jobs.cluster.login import HostKey

KEY = HostKey(line="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPortal", fingerprint="SHA256:portal")


@pytest.fixture
def narval(seeded) -> Cluster:
    return Cluster.objects.get(slug="narval")


def test_the_admin_index_is_the_portals(staff_client):
    page = staff_client.get("/admin/").text
    assert "GPU portal administration" in page
    assert "Django administration" not in page


def test_the_host_key_page_is_the_portals(staff_client, narval, monkeypatch):
    # The host is not reached: this is about the page around the key, not about fetching it.
    monkeypatch.setattr(remote, "host_key", lambda host, port: KEY)
    page = staff_client.get(f"/admin/clusters/{narval.pk}/host-key/").text
    assert KEY.fingerprint in page
    assert "<title>Host key of narval.alliancecan.ca | GPU portal administration</title>" in page
    assert "Django administration" not in page
