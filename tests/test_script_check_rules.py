"""Check my script: a good script stays quiet, and each problem is named and sourced."""

import pytest

from guidance.engine import sources
from guidance.engine.script_check import check_script
from tests.engine_helpers import cluster, note
from tests.script_check_helpers import GOOD, HEADER, checked, job

# --- A good script stays quiet -------------------------------------------------------------


@pytest.mark.parametrize("slug", ["narval", "beluga", "cedar", "graham", "processing"])
def test_a_good_script_gets_no_warning(slug):
    result = check_script(GOOD, cluster(slug))
    assert result.notes == ()
    assert result.directives[0].option == "gres"


def test_the_dgx_cluster_takes_no_sbatch_scripts():
    notes = checked(GOOD, "dgx")
    assert [(n.code, n.source) for n in notes] == [("not_slurm", sources.RUNAI)]
    assert "Run:ai" in notes[0].message


# --- Each problem, its code and its source --------------------------------------------------

NO_SHEBANG = job("--time=60").replace("#!/bin/bash\n", "")
CRLF = job("--time=60").replace("\n", "\r\n")
LATE = job("--time=60") + "#SBATCH --mem=4G\n"
NO_ACCOUNT = "#!/bin/bash\n#SBATCH --time=1:00:00\npython train.py $SLURM_TMPDIR/d\n"
FROM_PROJECT = "python train.py --data /project/def-me/imagenet\n"
FROM_HOME_PROJECTS = "python train.py --data ~/projects/def-me/imagenet\n"
S = sources

PROBLEMS = [
    # (cluster, script, code, source, words in the message)
    ("narval", HEADER + "echo hi\n", "missing_time", S.SBATCH_ELEMENTS, "--time"),
    ("narval", job("--time=8-00:00"), "over_max_duration", S.NOTES_SBATCH_ELEMENTS, "7 days"),
    ("cedar", job("--time=29-00:00"), "over_max_duration", S.SBATCH_ELEMENTS, "28 days"),
    (
        "narval",
        job("-t 60", "--gres=gpu:4"),
        "multi_gpu_without_launcher",
        S.SBATCH_ELEMENTS,
        "4 GPUs",
    ),
    (
        "narval",
        job("-t 60", body=FROM_PROJECT),
        "training_from_network",
        S.DATASET_SIZE_TIERS,
        "/project",
    ),
    (
        "processing",
        job("-t 60", body=FROM_HOME_PROJECTS),
        "training_from_network",
        S.PROCESSING_TRAINING,
        "$SCRATCH",
    ),
    ("cedar", job("--time=2-00:00"), "long_without_checkpoints", S.LONG_RUNNING, "24 h"),
    ("narval", NO_ACCOUNT, "no_account", S.SBATCH_ELEMENTS, "--account"),
    ("narval", job("-t 60", "--gres=gpu:h100:1"), "gres_type_unknown", S.PUBLIC_HARDWARE, "a100"),
    (
        "processing",
        job("-t 60", "--gpus=v100:1"),
        "gres_type_unknown",
        S.PROCESSING_TRAINING,
        "2080ti",
    ),
    ("narval", job("--time=3h"), "bad_time", S.SBATCH_TIME, "--time=3h"),
    ("narval", NO_SHEBANG, "not_a_batch_script", S.SBATCH_SCRIPT_RULES, "#!"),
    ("narval", "#!/bin/bash\necho hi\n", "not_a_batch_script", S.SBATCH_ELEMENTS, "No #SBATCH"),
    ("narval", "hello world\n", "not_a_batch_script", S.SBATCH_SCRIPT_RULES, "does not look like"),
    ("narval", "\x7fELF\x00\x00\x01", "not_a_batch_script", S.SBATCH_SCRIPT_RULES, "binary"),
    ("narval", CRLF, "dos_line_breaks", S.SBATCH_SCRIPT_RULES, "dos2unix"),
    ("narval", LATE, "ignored_directive", S.SBATCH_SCRIPT_RULES, "Line 7"),
]


@pytest.mark.parametrize(("slug", "text", "code", "source", "words"), PROBLEMS)
def test_each_problem_is_named_and_sourced(slug, text, code, source, words):
    found = note(checked(text, slug), code)
    assert found.source == source
    assert words in found.message + found.fix


def test_a_script_with_several_problems_gets_each_once():
    text = (
        "#!/bin/bash\n#SBATCH --gres=gpu:4\n#SBATCH -t 3-00:00\n"
        "python train.py --data /scratch/me/d\n"
    )
    # Worst first, then in the order of the lines they are about.
    assert [(n.code, n.severity.value, n.lines) for n in checked(text, "cedar")] == [
        ("no_account", "fails", ()),
        ("training_from_network", "wastes", (4,)),
        # Questions: the program, which may start DataLoader workers and may use all four GPUs
        # itself, is not given.
        ("too_few_cpus", "advice", (2,)),
        ("multi_gpu_without_launcher", "advice", (2, 4)),
        ("long_without_checkpoints", "advice", (3,)),
    ]
