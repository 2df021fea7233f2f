"""What a live update costs the database, and that the guidance kept between requests
(guidance/published.py) follows every edit at once."""

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from guidance import published
from guidance.models import Cluster, GpuType, StorageTier
from tests.test_compose_page import GOOD

HTMX = {"HX-Request": "true"}
# The session, the user and the guidance's revision token; nothing else per live update but,
# in the composer, the user's earlier runs of the job (one query, their GPUs' peak joined in).
LIVE_UPDATES = [("/jobs/new/", GOOD, 4), ("/guidance/narval/advice/", GOOD, 3)]


def _live_update(client, url: str = "/jobs/new/", data: dict = GOOD) -> str:
    response = client.get(url, data, headers=HTMX)
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize("url, data, most", LIVE_UPDATES, ids=["composer", "advice"])
def test_a_live_update_costs_a_few_queries(user_client, seeded, url, data, most):
    _live_update(user_client, url, data)  # the first one loads the cluster
    with CaptureQueriesContext(connection) as queries:
        page = _live_update(user_client, url, data | {"dataset_gb": "500"})
    assert "Node type and GPU" in page
    assert len(queries) <= most, [q["sql"] for q in queries]


def test_an_admins_edit_shows_in_the_next_live_update(staff_client, seeded):
    assert "a100 GPUs (40 GB)" in _live_update(staff_client)
    a100 = GpuType.objects.get(cluster__slug="narval", name="a100")
    page = staff_client.get(f"/admin/guidance/gputype/{a100.pk}/change/")
    form = page.context["adminform"].form
    data = {name: form.initial.get(name, "") for name in form.fields} | {"memory_gb": "48"}
    data["expects_full_utilization"] = "on" if a100.expects_full_utilization else ""
    response = staff_client.post(f"/admin/guidance/gputype/{a100.pk}/change/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert "a100 GPUs (48 GB)" in _live_update(staff_client)
    assert "a100 GPUs (48 GB)" in _live_update(staff_client, "/guidance/narval/advice/")


def test_a_deleted_storage_tier_is_gone_at_once(user_client, seeded):
    # As the admin's "Delete selected" does: a queryset's delete, which still sends the signals.
    assert "Node-local job directory" in _live_update(user_client)
    StorageTier.objects.filter(cluster__slug="narval", kind="node_local").delete()
    assert "Node-local job directory" not in _live_update(user_client)


def test_a_renamed_cluster_is_found_by_its_new_name_only(user_client, seeded):
    _live_update(user_client, "/guidance/narval/advice/")
    narval = Cluster.objects.get(slug="narval")
    narval.slug = "narval2"
    narval.save()
    assert user_client.get("/guidance/narval/advice/", GOOD, headers=HTMX).status_code == 404
    assert "Select a valid choice" in _live_update(user_client)
    assert "Node type and GPU" in _live_update(user_client, data=GOOD | {"cluster": "narval2"})


def test_an_edit_that_was_rolled_back_is_not_kept(user_client, seeded):
    _live_update(user_client)
    with pytest.raises(RuntimeError), transaction.atomic():
        a100 = GpuType.objects.get(cluster__slug="narval", name="a100")
        a100.memory_gb = 48
        a100.save()
        assert "a100 GPUs (48 GB)" in _live_update(user_client)  # kept under the new token
        raise RuntimeError("rolled back")
    assert "a100 GPUs (40 GB)" in _live_update(user_client)


def test_an_update_without_signals_shows_once_bumped(user_client, seeded):
    _live_update(user_client)
    GpuType.objects.filter(cluster__slug="narval", name="a100").update(memory_gb=48)
    published.bump()
    assert "a100 GPUs (48 GB)" in _live_update(user_client)


def test_a_data_migration_shows_once_migrate_has_run(user_client, seeded):
    # A migration's RunPython saves through historical models, which send no signal: migrate's
    # end bumps the token instead.
    _live_update(user_client)
    GpuType.objects.filter(cluster__slug="narval", name="a100").update(memory_gb=48)
    assert "a100 GPUs (40 GB)" in _live_update(user_client)  # kept: nothing said it changed
    call_command("migrate", "guidance", verbosity=0)
    assert "a100 GPUs (48 GB)" in _live_update(user_client)
