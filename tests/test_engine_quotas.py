"""Datasets and results against the published quotas of the storage they live on, and the
default results directory each site publishes."""

import pytest

from guidance.engine import TierKind, sources
from guidance.engine.storage import results_default, tier_of_path
from tests.engine_helpers import advise, cluster, codes, note


def test_a_dataset_no_storage_could_hold_is_refused_on_its_field():
    rec = advise("narval", dataset_gb=1e30)
    [error] = rec.errors
    assert (error.code, error.field) == ("dataset_too_large", "dataset_gb")
    assert "check the size and its unit" in error.message


@pytest.mark.parametrize("dataset_gb", [float("inf"), float("nan"), 10_000_001])
def test_sizes_beyond_any_storage_are_refused(dataset_gb):
    assert [e.code for e in advise("processing", dataset_gb=dataset_gb).errors] == [
        "dataset_too_large"
    ]


def test_a_dataset_over_every_quota_is_refused_naming_the_largest():
    rec = advise("narval", dataset_gb=30_000)  # 30 TB; scratch, the largest, holds 20 TB
    [error] = rec.errors
    assert error.code == "dataset_over_every_quota"
    assert "the largest quota is Scratch's, 20 TB" in error.message
    assert error.source == sources.STORAGE_AREAS


def test_a_site_with_storage_of_unknown_quota_may_hold_it():
    # The processing site's project folders publish no quota: 30 TB may fit there.
    assert advise("processing", dataset_gb=30_000).ok


def test_a_dataset_over_its_tiers_quota_is_a_warning_naming_it():
    rec = advise("narval", dataset_gb=1_500, data_location=TierKind.PROJECT)
    warning = note(rec.warnings, "over_quota")
    assert "1500 GB is more than Project's quota of 1 TB" in warning.message
    assert warning.source == sources.STORAGE_AREAS
    assert warning.field == "dataset_gb"
    # Left where the plan keeps it, project storage, the same.
    assert "over_quota" in codes(advise("narval", dataset_gb=1_500).warnings)
    assert "over_quota" not in codes(advise("narval", dataset_gb=900).warnings)


def test_files_over_the_file_quota_warn_only_while_they_are_single_files():
    many = {"dataset_gb": 200, "file_count": 1_281_167, "data_location": TierKind.PROJECT}
    assert "over_file_quota" in codes(advise("narval", **many, data_path="$PROJECT/in").warnings)
    shards = advise("narval", **many, data_path="$PROJECT/in-shards", data_kind="shards")
    assert "over_file_quota" not in codes(shards.warnings)


@pytest.mark.parametrize(
    ("path", "tier"),
    [
        ("$HOME/results", "Home"),
        ("~/results", "Home"),
        ("$HOME/projects/def-someone/results", "Project"),
        ("$PROJECT/results", "Project"),
        ("$SCRATCH/results", "Scratch"),
        ("/scratch/someone/results", "Scratch"),
        ("/elsewhere/results", None),
    ],
)
def test_it_tells_the_tier_of_a_path(path, tier):
    found = tier_of_path(cluster("narval"), path)
    assert (found.name if found else None) == tier


def test_results_in_a_small_home_are_a_warning():
    rec = advise("narval", results_dir="$HOME/results")
    warning = note(rec.warnings, "results_small_quota")
    assert "Home (quota 50 GB, 500,000 files)" in warning.message
    assert "$PROJECT/results instead" in warning.message
    assert warning.field == "results_dir"
    assert not {"results_small_quota", "results_not_persistent"} & codes(
        advise("narval", results_dir="$PROJECT/results").warnings
    )


def test_results_on_the_processing_sites_local_scratch_are_a_warning():
    rec = advise("processing", results_dir="$SCRATCH/results")
    warning = note(rec.warnings, "results_not_persistent")
    assert "Local SSD scratch" in warning.message
    assert warning.source == sources.PROCESSING_STAGING
    # The federation's scratch is shared storage that outlives the job: no warning.
    rec = advise("narval", results_dir="$SCRATCH/results")
    assert not {"results_not_persistent", "results_small_quota"} & codes(rec.warnings)


def test_each_site_publishes_its_results_directory_from_the_documents():
    path, why, source = results_default(cluster("narval"))
    assert path == "$PROJECT/results"
    assert "Narval's results directory on Project" in why
    assert source == sources.STORAGE_AREAS
    path, why, source = results_default(cluster("processing"))
    assert path == ""
    assert "project data folders, whose path it does not publish: enter yours" in why
    assert source == sources.PROCESSING_CLEANUP
