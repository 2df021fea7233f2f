"""Check my script: time limits at the boundaries, and long jobs without checkpoints."""

import pytest

from guidance import seed
from guidance.engine import sources
from tests.engine_helpers import codes, note
from tests.script_check_helpers import HEADER, checked, job


@pytest.mark.parametrize(
    ("slug", "value", "over"),
    [
        ("narval", "7-00:00:00", False),  # exactly the maximum
        ("narval", "10080", False),
        ("narval", "7-00:01", True),  # one minute over
        ("narval", "10081", True),
        ("narval", "168:00:01", True),  # one second over: Slurm rounds it up to a minute
        ("narval", "UNLIMITED", True),
        ("cedar", "28-00:00", False),
        ("cedar", "28-00:01", True),
    ],
)
def test_only_a_time_over_the_maximum_is_flagged(slug, value, over):
    script = job(f"--time={value}", body="python train.py --resume $SLURM_TMPDIR/d\n")
    assert ("over_max_duration" in codes(checked(script, slug))) is over


def test_over_the_maximum_suggests_a_chain_and_names_the_maximum():
    found = note(checked(job("--time=10-00:00"), "beluga"), "over_max_duration")
    assert "Béluga's maximum job duration of 7 days" in found.message
    assert "--array=1-10%1" in found.fix
    assert "--time=1-00:00" in found.fix


@pytest.mark.parametrize(
    ("slug", "source"),
    [
        ("narval", sources.NOTES_SBATCH_ELEMENTS),  # 004 states Narval's 7 days
        ("beluga", sources.SBATCH_ELEMENTS),
        ("cedar", sources.SBATCH_ELEMENTS),
        ("graham", sources.SBATCH_ELEMENTS),
    ],
)
def test_over_the_maximum_cites_where_that_cluster_states_it(slug, source):
    found = note(checked(job("--time=40-00:00"), slug), "over_max_duration")
    assert found.source == source
    seeded = next(c for c in seed.CLUSTERS if c.facts.slug == slug)
    assert seeded.source == source


@pytest.mark.parametrize(
    ("value", "flagged"),
    [("24:00:00", False), ("1-00:00", False), ("1440", False), ("1-00:01", True), ("2-00", True)],
)
def test_more_than_a_day_needs_checkpoints(value, flagged):
    assert ("long_without_checkpoints" in codes(checked(job(f"--time={value}")))) is flagged


@pytest.mark.parametrize(
    ("directive", "body"),
    [
        ("--array=1-10%1", "python train.py $SLURM_TMPDIR/d\n"),
        ("--mem=4G", "python train.py --resume-from latest $SLURM_TMPDIR/d\n"),
        (
            "--mem=4G",
            'LAST_CHECKPOINT=$(ls -t ~/scratch/c | head -1)\npython train.py "$LAST_CHECKPOINT"',
        ),
        ("--requeue", "python train.py $SLURM_TMPDIR/d\n"),
    ],
)
def test_checkpoint_logic_quiets_the_long_job_warning(directive, body):
    assert "long_without_checkpoints" not in codes(
        checked(job("--time=3-00:00", directive, body=body))
    )


def test_a_comment_about_checkpoints_is_no_checkpoint_logic():
    body = "# TODO: checkpoint\npython train.py $SLURM_TMPDIR/d\n"
    assert "long_without_checkpoints" in codes(checked(job("--time=3-00:00", body=body)))


def test_missing_time_names_the_default():
    assert "(1 h on Narval)" in note(checked(HEADER + "echo hi\n"), "missing_time").message
