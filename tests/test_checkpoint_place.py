"""Where checkpoints go: on the federation's scratch, in a folder per job name that every part of a
chain shares (004; 002's chain example); with the results on the processing cluster, whose scratch
is one node's and may be wiped (000), and where a site names no place. The script, the advice, the
API and the composer's help all say so, with the source. Run for real: tests/test_script_matrix.py.
"""

import importlib
import os
import pathlib
import subprocess
from dataclasses import replace

import pytest

from guidance.citations import cite, known_documents
from guidance.engine import sources
from guidance.engine.storage import checkpoint_plan
from guidance.engine.types import Cluster
from guidance.models import Policy
from guidance.seed import CLUSTERS, FEDERATION, PROCESSING
from jobs.compose.forms import ComposeForm
from jobs.compose.script import render
from jobs.script_markers import STOP_MARK, STOP_STATUS
from tests.source_helpers import link_to
from tests.test_advice_page import _advice
from tests.test_api import _post
from tests.test_script_combinations import _form_data
from tests.test_script_render import BENIGN

FEDERATION_NOTES = "004_95f926fd92fa5250.txt"
SEEDS = {seed.facts.slug: seed.facts for seed in CLUSTERS}
# Renumbered when merged: found by its name.
MIGRATION = importlib.import_module(
    "guidance.migrations."
    + next(
        path.stem
        for path in (pathlib.Path(__file__).parents[1] / "guidance" / "migrations").glob("*.py")
        if path.stem.endswith("_policy_checkpoint_dir")
    )
)


@pytest.mark.parametrize("slug", FEDERATION)
def test_the_federation_keeps_checkpoints_on_scratch_by_job_name(slug):
    plan = checkpoint_plan(SEEDS[slug])
    assert plan.folder("train") == "$SCRATCH/checkpoints/train"
    assert plan.tier is not None and plan.tier.name == "Scratch"
    assert plan.source == sources.STORAGE_AREAS
    assert "the same for every part of a chain" in plan.reason
    assert "copy the checkpoint you want to keep to the results" in plan.reason


def test_the_processing_cluster_keeps_them_with_the_results():
    plan = checkpoint_plan(PROCESSING.facts)
    assert plan.folder("train") == "$RESULTS_DEST/checkpoints"
    assert "node-local storage ($SCRATCH) is one node's and may be wiped" in plan.reason
    assert plan.source == sources.PROCESSING_SCRATCH


def test_a_site_that_names_no_place_keeps_them_with_the_results():
    plan = checkpoint_plan(Cluster("lab", "Lab"))
    assert plan.folder("train", "/data/results") == "/data/results/checkpoints"
    assert plan.reason == (
        "Lab names no place of their own for checkpoints: they stay with the results, which "
        "outlive the job."
    )


def test_the_migration_gives_seeded_databases_what_a_fresh_seed_has():
    for slug, (directory, (document, section)) in MIGRATION.SEEDED.items():
        policy = SEEDS[slug].policy
        assert (policy.checkpoint_dir, policy.checkpoint_source) == (
            directory,
            sources.Source(document, section),
        ), slug
    assert set(FEDERATION) | {"processing"} == set(MIGRATION.SEEDED)


def test_the_migration_leaves_an_admins_own_choice(seeded):
    from django.apps import apps

    Policy.objects.update(checkpoint_dir="", checkpoint_source_document="")
    Policy.objects.filter(cluster__slug="cedar").update(checkpoint_dir="$PROJECT/ckpt")
    MIGRATION.checkpoints_where_the_documents_say(apps, None)
    where = dict(Policy.objects.values_list("cluster__slug", "checkpoint_dir"))
    assert where["narval"] == "$SCRATCH/checkpoints"
    assert where["cedar"] == "$PROJECT/ckpt"
    assert where["processing"] == ""
    processing = Policy.objects.get(cluster__slug="processing")
    assert processing.checkpoint_source_section == "Introduction"


def test_the_script_names_the_folder_by_the_job_and_stops_without_scratch(tmp_path):
    spec = replace(
        BENIGN, checkpoint_root="$SCRATCH/checkpoints", site_variables=(("SCRATCH", ""),)
    )
    text = render(spec)
    assert 'CHECKPOINT_DIR="$SCRATCH"/checkpoints/train\n' in text
    # Where only the scheduler sets $SCRATCH, a job without it stops before anything else.
    environment = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    ran = subprocess.run(
        ["bash", "-c", text], env=environment, capture_output=True, text=True, cwd=tmp_path
    )
    assert ran.returncode == STOP_STATUS, ran.stderr
    assert f"{STOP_MARK} $SCRATCH is not set in this job." in ran.stderr
    assert list(tmp_path.iterdir()) == []
    # Where the site publishes its value, the job falls back on it instead.
    fallback = render(replace(spec, site_variables=(("SCRATCH", "/scratch/$USER"),)))
    assert ': "${SCRATCH:=/scratch/$USER}"' in fallback
    assert "$SCRATCH is not set" not in fallback


def test_without_a_checkpoint_directory_they_go_with_the_results():
    text = render(BENIGN)
    assert 'CHECKPOINT_DIR="$RESULTS_DEST/checkpoints"\n' in text


def test_the_composers_results_help_says_where_checkpoints_go_and_why(seeded):
    form = ComposeForm(_form_data("node-local", "chain", "1node", "pytorch-training-1gpu"))
    assert form.is_valid(), form.errors
    help_text = form.fields["results_dir"].help_text
    assert "Checkpoints go in $SCRATCH/checkpoints/<job name>: Narval's guidance" in help_text
    # The reason, then its source, as every other citation is labelled.
    assert help_text.endswith(
        f"to the results. ({cite(sources.STORAGE_AREAS, known_documents()).label})"
    )

    processing = ComposeForm(_form_data("local-scratch", "chain", "1node", "inference"))
    assert processing.is_valid(), processing.errors
    help_text = processing.fields["results_dir"].help_text
    assert "Checkpoints go in the results' checkpoints folder: Processing GPU cluster" in help_text


def test_the_advice_says_where_checkpoints_go_with_the_source(user_client, seeded):
    page = _advice(user_client, hours="72", checkpointing="on").content.decode()
    start = page.index('<p class="checkpoints" data-root="$SCRATCH/checkpoints">')
    paragraph = page[start : page.index("</p>", start)]
    assert "<code>$SCRATCH/checkpoints/&lt;job name&gt;</code>" in paragraph
    assert link_to(FEDERATION_NOTES) in paragraph

    page = _advice(user_client, "processing", hours="72", checkpointing="on").content.decode()
    assert "the results' <code>checkpoints</code> folder" in page
    assert "one node&#x27;s and may be wiped" in page


def test_the_api_says_where_checkpoints_go(client, seeded, secret):
    body = _post(client, secret, hours=72, checkpointing=True).json()
    checkpoints = body["storage"]["checkpoints"]
    assert checkpoints["folder"] == "$SCRATCH/checkpoints/<job name>"
    assert checkpoints["source"].startswith(f"{FEDERATION_NOTES}, ")
    body = _post(client, secret, cluster="processing").json()
    assert body["storage"]["checkpoints"]["folder"] == "<results directory>/checkpoints"
    assert body["storage"]["checkpoints"]["source"].startswith("000_6e5e8c8484f3c234.txt, ")
