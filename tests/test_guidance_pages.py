"""The guidance pages show what admins published, and admins' edits show at once, with history."""

import io

import pytest
from django.core.management import call_command

from guidance import models
from guidance.facts import cluster_facts
from guidance.seed import CLUSTERS
from guidance.templatetags.guidance_tags import decimal_size

SEEDED = ["processing", "narval", "beluga", "cedar", "graham", "dgx"]


@pytest.fixture
def gpu(seeded):
    return models.GpuType.objects.get(cluster__slug="processing", name="rtx")


def _gpu_form(gpu: models.GpuType, **changes) -> dict:
    data = {
        "cluster": gpu.cluster_id,
        "name": gpu.name,
        "model": gpu.model,
        "memory_gb": gpu.memory_gb,
        "relative_speed": gpu.relative_speed,
        "source_document": gpu.source_document,
        "source_section": gpu.source_section,
        "note": gpu.note,
    }
    return data | changes


def test_it_requires_login(client, seeded):
    assert client.get("/guidance/").status_code == 302
    assert client.get("/guidance/narval/").status_code == 302


def test_it_lists_every_seeded_cluster(user_client, seeded):
    page = user_client.get("/guidance/").content.decode()
    for cluster in CLUSTERS:
        assert f'href="/guidance/{cluster.facts.slug}/"' in page
        assert cluster.facts.name in page
    assert "guidance only" in page  # the DGX cluster runs Run:ai


@pytest.mark.parametrize("slug", SEEDED)
def test_each_cluster_page_shows_node_types_and_storage(user_client, seeded, slug):
    page = user_client.get(f"/guidance/{slug}/").content.decode()
    cluster = models.Cluster.objects.get(slug=slug)
    for partition in cluster.partitions.all():
        assert f"<td>{partition.name}" in page
    for tier in cluster.storage_tiers.all():
        assert f"<td>{tier.name}</td>" in page


def test_the_processing_page_shows_its_rules(user_client, seeded):
    page = user_client.get("/guidance/processing/").content.decode()
    assert "<code>$SCRATCH</code>" in page
    assert "Wiped periodically, oldest files first" in page
    assert "near-100% use only" in page
    assert "Set aside for" in page and "Debugging" in page
    assert "rsync -avv --info=progress2 --delete &lt;SOURCE&gt; $SCRATCH" in page  # the article


def test_the_dgx_page_says_it_takes_no_scripts(user_client, seeded):
    page = user_client.get("/guidance/dgx/").content.decode()
    assert "runs Run:ai, not Slurm" in page
    assert "more than 90% GPU compute utilization" in page


def test_storage_quotas_read_as_the_site_publishes_them(user_client, seeded):
    # The federation documents home 50 GB, scratch 20 TB, project 1 TB, in powers of 1000.
    page = user_client.get("/guidance/narval/").content.decode()
    for quota in ("50 GB", "20 TB", "1 TB"):
        assert f'<td class="nowrap">{quota}</td>' in page
    for binary in ("46.6", "18.2 TB", "931.3"):
        assert binary not in page


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        (0, "0 B"),
        (999, "999 B"),
        (1000, "1 kB"),
        (1_500_000, "1.5 MB"),
        (50 * 1000**3, "50 GB"),
        (1_250 * 1000**3, "1.25 TB"),
        (999_999 * 1000**2, "1 TB"),  # rounds up to the next unit, not "1000 GB"
        (20 * 1000**4, "20 TB"),
    ],
)
def test_sizes_are_shown_in_decimal_units(size, shown):
    assert decimal_size(size) == shown


def test_an_unknown_cluster_is_404(user_client, seeded):
    assert user_client.get("/guidance/nosuch/").status_code == 404


def test_an_admin_edit_shows_at_once_and_in_history(staff_client, staff, gpu):
    url = f"/admin/guidance/gputype/{gpu.pk}/change/"
    response = staff_client.post(url, _gpu_form(gpu, model="NVIDIA Quadro RTX 6000 24GB"))
    assert response.status_code == 302, response.content.decode()[:2000]

    page = staff_client.get("/guidance/processing/").content.decode()
    assert "NVIDIA Quadro RTX 6000 24GB" in page

    latest = gpu.history.first()
    assert latest.history_user == staff
    assert latest.model == "NVIDIA Quadro RTX 6000 24GB"
    delta = latest.diff_against(latest.prev_record)
    assert [c.field for c in delta.changes] == ["model"]
    history_page = staff_client.get(f"{url.removesuffix('change/')}history/").content.decode()
    assert "NVIDIA Quadro RTX 6000 24GB" in history_page
    assert staff.username in history_page


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"memory_gb": -24}, "Must be more than zero."),
        ({"memory_gb": 0}, "Must be more than zero."),
        ({"memory_gb": "lots"}, "Enter a number."),
    ],
)
def test_admin_rejects_bad_gpu_values_with_a_message(staff_client, gpu, changes, message):
    url = f"/admin/guidance/gputype/{gpu.pk}/change/"
    response = staff_client.post(url, _gpu_form(gpu, **changes))
    assert response.status_code == 200
    assert message in response.content.decode()
    gpu.refresh_from_db()
    assert gpu.memory_gb == 24


def test_admin_rejects_a_default_walltime_over_the_maximum(staff_client, seeded):
    partition = models.Partition.objects.get(cluster__slug="narval", name="a100")
    data = {
        "cluster": partition.cluster_id,
        "name": partition.name,
        "slurm_partition": "",
        "gpu_type": partition.gpu_type_id,
        "gpus_per_node": 4,
        "cpus_per_node": 48,
        "memory_per_node_mb": 498000,
        "max_hours": 10,
        "default_hours": 12,
        "purpose": "",
    }
    response = staff_client.post(f"/admin/guidance/partition/{partition.pk}/change/", data)
    assert "The default walltime cannot exceed the maximum." in response.content.decode()
    data |= {"default_hours": 1, "max_hours": -1}
    response = staff_client.post(f"/admin/guidance/partition/{partition.pk}/change/", data)
    assert "Must be more than zero." in response.content.decode()


def test_articles_are_sanitized(user_client, seeded):
    article = models.Article.objects.create(
        slug="x", title="Careful", body="Hello <script>alert(1)</script> [x](javascript:alert(1))"
    )
    page = user_client.get("/guidance/").content.decode()
    assert "Careful" in page
    assert "<script>alert" not in page
    assert "javascript:" not in page
    article.delete()


def test_the_seed_keeps_admins_edits(seeded):
    models.Policy.objects.filter(cluster__slug="narval").update(cpus_per_gpu=8)
    out = io.StringIO()
    call_command("seed_guidance", stdout=out)
    assert "0 objects created" in out.getvalue()
    assert models.Policy.objects.get(cluster__slug="narval").cpus_per_gpu == 8
    assert models.Cluster.objects.count() == len(SEEDED)


@pytest.mark.parametrize("entry", CLUSTERS, ids=lambda c: c.facts.slug)
def test_the_database_gives_the_engine_the_seeded_facts(seeded, entry):
    facts = cluster_facts(models.Cluster.objects.get(slug=entry.facts.slug))
    assert set(facts.gpu_types) == set(entry.facts.gpu_types)
    assert set(facts.partitions) == set(entry.facts.partitions)
    assert set(facts.storage_tiers) == set(entry.facts.storage_tiers)
    assert facts.policy == entry.facts.policy
    assert (facts.slug, facts.name, facts.scheduler) == (
        entry.facts.slug,
        entry.facts.name,
        entry.facts.scheduler,
    )
