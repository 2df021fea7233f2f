"""What a refused submission tells its owner: pure tables, no database."""

import pytest

from guidance.engine.slurm_refusals import explain_refusal, meaning

# Each refusal the portal explains, worded as Slurm's sbatch prints it.
REFUSALS = [
    (
        "sbatch: error: invalid partition specified: gpu-big",
        "The cluster has no partition of that name.",
    ),
    (
        "sbatch: error: Batch job submission failed: Requested time limit is invalid "
        "(missing or exceeds some limit)",
        "The time asked for is over the partition's limit.",
    ),
    (
        "sbatch: error: Batch job submission failed: Requested node configuration is not available",
        "No node of that partition has the GPUs, CPUs or memory asked for.",
    ),
    (
        "sbatch: error: Batch job submission failed: Invalid account or account/partition "
        "combination specified",
        "You may not bill that account: check the account name.",
    ),
    (
        "sbatch: error: Batch job submission failed: Invalid generic resource (gres) specification",
        "The cluster has no GPUs of that type.",
    ),
    (
        "sbatch: error: QOSMaxSubmitJobPerUserLimit",
        "You have as many jobs queued as the cluster allows.",
    ),
]


@pytest.mark.parametrize(("slurm_says", "plain"), REFUSALS)
def test_each_known_refusal_has_its_meaning(slurm_says, plain):
    assert meaning(slurm_says) == plain


@pytest.mark.parametrize(("slurm_says", "plain"), REFUSALS)
def test_the_job_says_slurms_words_first_then_their_meaning(slurm_says, plain):
    assert explain_refusal(slurm_says) == f"Slurm refused the job: {slurm_says}\n{plain}"


def test_an_unknown_refusal_is_given_in_slurms_words_alone():
    said = "sbatch: error: Batch job submission failed: Something new"
    assert meaning(said) == ""
    assert explain_refusal(said) == f"Slurm refused the job: {said}"
