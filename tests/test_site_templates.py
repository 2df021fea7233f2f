"""Site templates are written for clusters: each starts on one it is for and composes there as it
is, with nothing the user must undo first (the multi-node one included)."""

import re

import pytest

from guidance.models import Cluster
from jobs.compose.forms import ComposeForm
from jobs.compose.from_form import compose
from jobs.models import SiteTemplate
from tests.test_multi_node_script import WRAPPED as RUN_ON_EVERY_NODE

# What the user adds to any template: the data and the time.
THE_USERS_OWN = {
    "account": "def-someuser",
    "dataset_gb": "50",
    "file_count": "",
    "data_path": "/project/def-someuser/data",
    "hours": "12",
    "nodes": "1",
    "similar_runs": "1",
    # Where the cluster publishes no results directory (the processing site: 000 names project
    # folders but no path), the user enters theirs; the templates for the others name one.
    "results_dir": "/project/def-someuser/results",
}


def _as_posted(values: dict) -> dict:
    """Template values as the browser posts them: checkboxes "on" or absent, the rest text."""
    return {
        name: "on" if value is True else str(value)
        for name, value in values.items()
        if value is not False
    }


def _pairs():
    for template in SiteTemplate.objects.prefetch_related("clusters"):
        clusters = template.clusters.all() or Cluster.objects.filter(scheduler="slurm")
        for cluster in clusters:
            yield template, cluster


def test_every_site_template_composes_on_every_cluster_it_is_for(seeded):
    pairs = list(_pairs())
    assert {c.slug for _, c in pairs} >= {"narval", "beluga", "cedar", "graham", "processing"}
    for template, cluster in pairs:
        data = THE_USERS_OWN | _as_posted(template.starting_values(cluster.slug))
        form = ComposeForm(data)
        composed = compose(form)
        assert composed is not None, (template.slug, cluster.slug, form.errors.as_data())
        assert composed.script, (template.slug, cluster.slug)


def test_the_local_ssd_site_is_offered_templates_without_modules(seeded):
    processing = Cluster.objects.get(slug="processing")
    offered = SiteTemplate.objects.filter(clusters=processing)
    assert {t.slug for t in offered} == {
        "pytorch-training-1gpu-venv",
        "pytorch-ddp-2nodes-venv",
        "inference-venv",
    }
    assert all(not t.fields["modules"] for t in offered)


@pytest.mark.parametrize(
    ("query", "cluster"),
    [
        ("template=pytorch-training-1gpu-venv", "processing"),
        ("template=pytorch-training-1gpu&on=narval", "narval"),
        ("template=pytorch-training-1gpu&on=processing", "beluga"),  # not written for it
    ],
)
def test_a_template_starts_on_a_cluster_it_is_written_for(user_client, seeded, query, cluster):
    page = user_client.get(f"/jobs/new/?{query}").content.decode()
    selected = re.search(r'<option value="([^"]+)" selected>', page)
    assert selected and selected.group(1) == cluster


def test_the_template_list_says_which_clusters_each_is_for(user_client, seeded):
    page = user_client.get("/jobs/new/").content.decode()
    assert "PyTorch on two nodes (torchrun)</a> <span" in page
    assert "(Béluga, Cedar, Graham, Narval)" in page or "(Beluga, Cedar, Graham, Narval)" in page
    assert "(Processing GPU cluster)" in page


def test_the_two_node_template_starts_torchrun_on_every_node(seeded):
    template = SiteTemplate.objects.get(slug="pytorch-ddp-2nodes")
    data = THE_USERS_OWN | _as_posted(template.starting_values("narval")) | {"nodes": "2"}
    composed = compose(ComposeForm(data))
    script = composed.script
    assert "#SBATCH --nodes=2" in script
    assert "#SBATCH --gres=gpu:a100:4" in script
    assert "#SBATCH --ntasks-per-node=1" in script
    assert RUN_ON_EVERY_NODE in script
    assert '--node_rank="$NODE_RANK" --master_addr="$MASTER_ADDR"' in script
    assert "export MASTER_ADDR MASTER_PORT NNODES GPUS_PER_NODE WORLD_SIZE" in script
