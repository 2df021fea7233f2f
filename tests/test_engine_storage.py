"""Where the data lives during the job: size tiers, small files, staging, copy-back, clean-up."""

import pytest

from guidance.engine import Placement, TierKind, Workload, sources
from guidance.engine.storage import CLEANUP_COMMAND, EVERY_NODE_CLEANS
from tests.engine_helpers import advise, codes, note

DOC_001_TIERS = sources.DATASET_SIZE_TIERS


@pytest.mark.parametrize(
    ("dataset_gb", "placement", "path"),
    [
        (0, Placement.MEMORY, "$SLURM_TMPDIR"),
        (5, Placement.MEMORY, "$SLURM_TMPDIR"),
        (10, Placement.MEMORY, "$SLURM_TMPDIR"),  # "10 GB or less": the boundary is memory
        (10.01, Placement.NODE_LOCAL, "$SLURM_TMPDIR"),
        (50, Placement.NODE_LOCAL, "$SLURM_TMPDIR"),
        (100, Placement.NODE_LOCAL, "$SLURM_TMPDIR"),  # "100 GB or less": node-local
        (100.01, Placement.SHARED, "$HOME/projects/def-$ACCOUNT"),
        (500, Placement.SHARED, "$HOME/projects/def-$ACCOUNT"),
    ],
)
def test_it_places_training_data_by_size(dataset_gb, placement, path):
    rec = advise("narval", dataset_gb=dataset_gb)
    assert rec.storage.placement == placement
    assert rec.storage.tier.path == path
    assert rec.storage.source == DOC_001_TIERS


def test_it_says_why_in_numbers():
    assert (
        "50 GB is more than 10 GB and at most 100 GB"
        in advise("narval", dataset_gb=50).storage.reason
    )
    assert "500 GB is more than 100 GB" in advise("narval", dataset_gb=500).storage.reason


def test_it_warns_when_training_must_read_over_the_network():
    rec = advise("narval", dataset_gb=500)
    assert note(rec.warnings, "training_from_network").source == sources.PROCESSING_TRAINING
    assert "training_from_network" not in codes(advise("narval", dataset_gb=100).warnings)


def test_it_trains_from_local_scratch_on_the_processing_cluster():
    rec = advise("processing", dataset_gb=50)
    assert rec.storage.placement == Placement.NODE_LOCAL
    assert rec.storage.tier.path == "$SCRATCH"
    # 000: "train from scratch", not "from network"
    assert rec.storage.source == sources.PROCESSING_STAGING
    assert "rsync" in rec.storage.staging[0].command


def test_inference_may_read_from_network_storage():
    rec = advise("processing", workload=Workload.INFERENCE, dataset_gb=50)
    assert rec.storage.placement == Placement.SHARED
    assert rec.storage.source == sources.PROCESSING_INFERENCE
    assert rec.storage.staging == ()


def test_inference_with_many_small_files_still_stages_an_archive():
    rec = advise("narval", workload=Workload.INFERENCE, dataset_gb=50, file_count=400_000)
    assert rec.storage.placement == Placement.NODE_LOCAL
    assert rec.storage.archive


@pytest.mark.parametrize(
    ("file_count", "dataset_gb", "archive"),
    [
        (0, 50, False),  # unknown
        (1_000, 50, False),  # 50 MB files
        (99_999, 99, False),  # just under the count threshold, ~1 MB files
        (100_000, 99, True),  # "hundreds of thousands or more"
        (2_000, 0.5, True),  # 250 kB files: small
        (1_000, 0.3, False),  # 300 kB files: not under the small-file size
    ],
)
def test_it_archives_many_or_small_files(file_count, dataset_gb, archive):
    rec = advise("narval", dataset_gb=dataset_gb, file_count=file_count)
    assert rec.storage.archive is archive
    if archive:
        assert "tar -xf" in rec.storage.staging[0].command
        assert rec.storage.staging[0].source == sources.ARCHIVE_DATASET
    elif file_count:
        assert "rsync" in rec.storage.staging[0].command


def test_it_warns_about_file_quotas_for_many_files():
    rec = advise("narval", dataset_gb=50, file_count=600_000, data_location=TierKind.PROJECT)
    assert note(rec.warnings, "many_small_files").source == sources.SMALL_FILES
    quota = note(rec.warnings, "over_file_quota")
    assert "500,000" in quota.message
    assert quota.source == sources.STORAGE_AREAS


def test_small_files_get_an_archive_tip_without_a_quota_warning():
    rec = advise("narval", dataset_gb=0.5, file_count=2_000)
    assert "small_files" in codes(rec.tips)
    assert "many_small_files" not in codes(rec.warnings)


def test_several_nodes_stage_on_every_node():
    rec = advise("narval", dataset_gb=50, nodes=2, multi_gpu=True, gpu_count=8)
    step = rec.storage.staging[0]
    assert step.command.startswith("srun --ntasks=$SLURM_NNODES --ntasks-per-node=1 ")
    assert step.source == sources.MULTI_NODE_STAGING


def test_per_job_storage_needs_copy_back_but_no_cleanup():
    rec = advise("narval", dataset_gb=50)
    assert rec.storage.copy_back.source == sources.SINGLE_NODE_STAGING
    assert rec.storage.results_tier.kind == TierKind.PROJECT
    assert rec.storage.cleanup is None


def test_shared_local_scratch_is_cleaned_up_and_results_copied_to_project():
    rec = advise("processing", dataset_gb=50)
    assert rec.storage.cleanup.command == 'rm -rf "$WORK_DIR"'
    assert rec.storage.cleanup.source == sources.PROCESSING_CLEANUP
    assert rec.storage.copy_back.source == sources.PROCESSING_CLEANUP
    assert rec.storage.results_tier.name == "Project data folders"


RM_WORK_DIR = 'rm -rf "$WORK_DIR"'


@pytest.mark.parametrize(
    ("slug", "fields", "work_path", "cleanup"),
    [
        # Staged on a per-job tier: the scheduler removes it.
        ("narval", {"dataset_gb": 50}, "$SLURM_TMPDIR", None),
        # Read in place, a virtualenv built on the same per-job tier.
        ("narval", {"dataset_gb": 500, "builds_environment": True}, "$SLURM_TMPDIR", None),
        # Staged on a tier every job on the node shares.
        ("processing", {"dataset_gb": 50}, "$SCRATCH", RM_WORK_DIR),
        # Read in place: no folder on the node, unless a virtualenv is built there.
        ("processing", {"workload": Workload.INFERENCE, "dataset_gb": 50}, "$SCRATCH", None),
        (
            "processing",
            {"workload": Workload.INFERENCE, "dataset_gb": 50, "builds_environment": True},
            "$SCRATCH",
            RM_WORK_DIR,
        ),
        # No node-local storage: a virtualenv goes to the node's /tmp, which no one clears.
        ("dgx", {"dataset_gb": 50, "builds_environment": True}, None, RM_WORK_DIR),
        ("dgx", {"dataset_gb": 5, "builds_environment": True}, None, RM_WORK_DIR),  # in memory
        ("dgx", {"dataset_gb": 50}, None, None),
    ],
)
def test_the_plan_removes_the_jobs_folder_on_the_node_where_no_one_else_does(
    slug, fields, work_path, cleanup
):
    storage = advise(slug, **fields).storage
    assert (storage.work_tier.path if storage.work_tier else None) == work_path
    assert (storage.cleanup.command if storage.cleanup else None) == cleanup


def test_a_virtualenvs_folder_is_removed_for_its_own_reason():
    spec = {"workload": Workload.INFERENCE, "dataset_gb": 50, "builds_environment": True}
    cleanup = advise("processing", **spec).storage.cleanup
    assert (cleanup.action, cleanup.reason) == (
        "Remove the job's folder on the node",
        "Other jobs need the space.",
    )
    assert cleanup.source == sources.PROCESSING_CLEANUP
    staged = advise("processing", dataset_gb=50).storage.cleanup
    assert staged.action == "Remove the staged data when the job ends"


@pytest.mark.parametrize(
    "fields", [{"dataset_gb": 50}, {"dataset_gb": 500, "builds_environment": True}]
)
def test_on_two_nodes_the_plan_says_every_node_removes_its_folder(fields):
    two_nodes = {"nodes": 2, "multi_gpu": True, "gpu_count": 8}
    cleanup = advise("processing", **fields, **two_nodes).storage.cleanup
    assert cleanup.command == CLEANUP_COMMAND
    assert cleanup.reason.endswith(EVERY_NODE_CLEANS)
    one_node = advise("processing", **fields).storage.cleanup
    assert EVERY_NODE_CLEANS not in one_node.reason


def test_data_on_nearline_must_be_recalled_first():
    rec = advise("cedar", data_location=TierKind.NEARLINE)
    assert note(rec.warnings, "data_on_nearline").source == sources.STORAGE_AREAS


def test_in_memory_data_counts_against_the_job_memory():
    rec = advise("beluga", dataset_gb=8)
    assert rec.resources.memory_mb.value == 47_000 + 8_000


def test_it_falls_back_to_node_local_when_the_data_does_not_fit_beside_the_job():
    rec = advise("graham", dataset_gb=10, gpu_type="p100", multi_gpu=True, gpu_count=2)
    # two P100s take 128,000 MB of the node's 127,000 MB: no room for 10 GB more
    assert rec.storage.placement == Placement.NODE_LOCAL
    assert "dataset_exceeds_node_memory" in codes(rec.warnings)


def test_without_node_local_storage_it_says_so():
    rec = advise("dgx", dataset_gb=50)
    assert rec.storage.placement == Placement.SHARED
    assert "publishes no node-local storage" in rec.storage.reason


@pytest.mark.parametrize("gb", [50, 300, 2000])
def test_the_local_ssd_cluster_stages_training_data_whatever_its_size(gb):
    # 000 copies training data to the node's SSD first; 001's 100 GB is the federation's limit.
    rec = advise("processing", dataset_gb=gb)
    assert rec.storage.placement == Placement.NODE_LOCAL
    assert "whatever its size" in rec.storage.reason
    assert rec.storage.source == sources.PROCESSING_STAGING
    assert "training_from_network" not in codes(rec.warnings)
