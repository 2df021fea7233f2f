"""Check my script: sbatch's reading of a pasted script, and the guidance applied to it."""

import math
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guidance.engine import sources
from guidance.engine.script_check import (
    MAX_CHARS,
    check_script,
    gpu_request,
    gres_gpus,
    parse_script,
    parse_time,
)
from guidance.seed import CLUSTERS
from tests.engine_helpers import cluster, codes, note

# 002's example script, with the CPUs it suggests and an account: nothing to say about it.
GOOD = """\
#!/bin/bash
#SBATCH --gres=gpu:1       # Request GPU "generic resources"
#SBATCH --cpus-per-task=6  # Refer to cluster's documentation for the right CPU/GPU ratio
#SBATCH --mem=32000M       # Memory proportional to GPUs: 32000 Cedar, 47000 Beluga, 64000 Graham.
#SBATCH --time=0-03:00     # DD-HH:MM:SS
#SBATCH --account=def-someuser

module load python/3.6 cuda cudnn

SOURCEDIR=~/ml-test

# Prepare virtualenv
source ~/my_env/bin/activate
# You could also create your environment here, on the local storage ($SLURM_TMPDIR).

# Prepare data
mkdir $SLURM_TMPDIR/data
tar xf ~/projects/def-xxxx/data.tar -C $SLURM_TMPDIR/data

# Start training
python $SOURCEDIR/train.py $SLURM_TMPDIR/data
"""

HEADER = "#!/bin/bash\n#SBATCH --account=def-someuser\n#SBATCH --gres=gpu:1\n"


def job(*directives: str, body: str = "python train.py $SLURM_TMPDIR/data\n") -> str:
    """A script that is good but for what the test changes."""
    lines = [f"#SBATCH {d}\n" for d in directives]
    return HEADER + "".join(lines) + body


def checked(text: str, slug: str = "narval"):
    return check_script(text, cluster(slug)).notes


# --- Slurm's time formats ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "minutes"),
    [
        ("90", 90),  # minutes
        ("0", 0),
        ("5:00", 5),  # MM:SS
        ("5:30", 6),  # seconds round up, as Slurm does
        ("03:00:00", 180),  # HH:MM:SS
        ("1:90:00", 150),  # Slurm does not bound the fields
        ("2-12", 3600),  # D-HH
        ("0-03:00", 180),  # D-HH:MM
        ("1-00:00:01", 1441),  # D-HH:MM:SS
        ("7-", 10080),
        (" 60 ", 60),
        ("UNLIMITED", math.inf),
        ("infinite", math.inf),
        ("-1", math.inf),
    ],
)
def test_it_reads_slurms_time_formats(value, minutes):
    assert parse_time(value) == minutes


@pytest.mark.parametrize(
    "value", ["", "3h", "1.5", "1:2:3:4", "1-2-3", ":30", "1:-5", "-5", "1-2:3:4:5", "ten", "1e3"]
)
def test_it_rejects_what_sbatch_rejects(value):
    assert parse_time(value) is None


# --- How sbatch reads #SBATCH lines --------------------------------------------------------


def test_it_reads_long_short_and_spaced_options():
    script = parse_script(
        "#!/bin/bash\n"
        "#SBATCH --time=1:00:00\n"
        "#SBATCH --mem 4G\n"
        "#SBATCH -N 2 -n8\n"
        "#SBATCH -c4 -G 2\n"
        "#SBATCH -p gpu -A def-me -J 'my job' -o out.log -e err.log -a 1-4%1\n"
    )
    assert script.shebang
    assert {d.option: d.value for d in script.directives} == {
        "time": "1:00:00",
        "mem": "4G",
        "nodes": "2",
        "ntasks": "8",
        "cpus-per-task": "4",
        "gpus": "2",
        "partition": "gpu",
        "account": "def-me",
        "job-name": "my job",
        "output": "out.log",
        "error": "err.log",
        "array": "1-4%1",
    }


def test_a_trailing_comment_is_not_part_of_the_option():
    script = parse_script("#!/bin/bash\n#SBATCH --time=0-03:00   # three hours\n")
    assert [(d.option, d.value) for d in script.directives] == [("time", "0-03:00")]
    assert parse_script("#SBATCH --time=10#x\n").option("time") == "10"


def test_the_last_value_wins():
    assert parse_script("#SBATCH -t 10\n#SBATCH --time=20\n").option("time") == "20"


def test_flags_take_no_value():
    script = parse_script("#SBATCH --requeue --time 5\n#SBATCH -H -t 7\n")
    assert [(d.option, d.value) for d in script.directives] == [
        ("requeue", None),
        ("time", "5"),
        ("hold", None),
        ("time", "7"),
    ]


def test_comments_and_blank_lines_keep_the_header_open():
    script = parse_script("#!/bin/bash\n\n# a comment\n   \n#SBATCH --time=5\n")
    assert script.option("time") == "5"
    assert not script.ignored


def test_sbatch_stops_reading_directives_at_the_first_command():
    script = parse_script("#!/bin/bash\n#SBATCH --time=5\nmodule load python\n#SBATCH --mem=4G\n")
    assert script.option("time") == "5"
    assert script.option("mem") is None  # sbatch ignores it too
    assert script.ignored == ((4, "#SBATCH --mem=4G", "it comes after a command"),)


def test_only_lines_starting_with_sbatch_count():
    script = parse_script("#!/bin/bash\n  #SBATCH --time=5\n# SBATCH --mem=1G\n##SBATCH -N 2\n")
    assert script.directives == ()
    assert [why for _, _, why in script.ignored] == ["it is indented"]


def test_commands_join_continued_lines():
    script = parse_script("#!/bin/bash\npython train.py \\\n  --data /project/x\necho done\n")
    assert script.commands == ("python train.py --data /project/x", "echo done")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("gpu", (None, 1)),
        ("gpu:2", (None, 2)),
        ("gpu:a100:2", ("a100", 2)),
        ("gpu:a100", ("a100", 1)),
        ("gres/gpu:3", (None, 3)),
        ("mps:50,gpu:v100:4", ("v100", 4)),
        ("mps:50", (None, None)),
    ],
)
def test_it_reads_gres(value, expected):
    assert gres_gpus(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"), [("2", (None, 2)), ("a100:2", ("a100", 2)), ("a100:x", ("a100", None))]
)
def test_it_reads_gpu_counts(value, expected):
    assert gpu_request(value) == expected


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

STAGED = "rsync -a /project/def-me/data $SLURM_TMPDIR/\n"
EVERY_NODE = "srun --ntasks=$SLURM_NNODES --ntasks-per-node=1"

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
    ("narval", job("--time=8-00:00"), "over_max_duration", S.SBATCH_ELEMENTS, "7 days"),
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
    ("narval", LATE, "ignored_directive", S.SBATCH_SCRIPT_RULES, "Line 6"),
]


@pytest.mark.parametrize(("slug", "text", "code", "source", "words"), PROBLEMS)
def test_each_problem_is_named_and_sourced(slug, text, code, source, words):
    found = note(checked(text, slug), code)
    assert found.source == source
    assert words in found.message


def test_a_script_with_several_problems_gets_each_once():
    text = (
        "#!/bin/bash\n#SBATCH --gres=gpu:4\n#SBATCH -t 3-00:00\n"
        "python train.py --data /scratch/me/d\n"
    )
    assert [n.code for n in checked(text, "cedar")] == [
        "long_without_checkpoints",
        "no_account",
        "multi_gpu_without_launcher",
        "training_from_network",
    ]


# --- Time limits at the boundaries ----------------------------------------------------------


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
    message = note(checked(job("--time=10-00:00"), "beluga"), "over_max_duration").message
    assert "Béluga's maximum job duration of 7 days" in message
    assert "--array=1-10%1" in message
    assert "--time=1-00:00" in message


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


# --- GPUs and launchers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "directives",
    [
        ("--gres=gpu:2",),
        ("--gres=gpu:a100:2",),
        ("--gpus=2",),
        ("-G 2",),
        ("--gpus-per-node=a100:2",),
        ("--gpus-per-task=1", "--ntasks=2"),
        ("--gpus-per-task=1", "--ntasks-per-node=2"),
        ("--nodes=2",),  # one GPU per node, two in all
    ],
)
def test_several_gpus_without_a_launcher_are_flagged(directives):
    text = job("--time=60", *directives)
    assert "multi_gpu_without_launcher" in codes(checked(text))


@pytest.mark.parametrize(
    "command",
    [
        "torchrun --nproc_per_node=4 train.py $SLURM_TMPDIR/d",
        "python -m torch.distributed.run --nproc_per_node=4 train.py $SLURM_TMPDIR/d",
        "python -m torch.distributed.launch train.py $SLURM_TMPDIR/d",
        "accelerate launch --multi_gpu train.py $SLURM_TMPDIR/d",
        "deepspeed train.py $SLURM_TMPDIR/d",
        "horovodrun -np 4 python train.py $SLURM_TMPDIR/d",
        "mpirun -np 4 python train.py $SLURM_TMPDIR/d",
        "srun python train.py $SLURM_TMPDIR/d",
        "python train.py --devices 4 $SLURM_TMPDIR/d",
        "python train.py trainer.devices=4 $SLURM_TMPDIR/d",
        "for i in 0 1 2 3; do CUDA_VISIBLE_DEVICES=$i python train.py --seed $i & done; wait",
        "python a.py & python b.py &\nwait",
    ],
)
def test_a_launcher_uses_the_gpus(command):
    text = job("--time=60", "--gres=gpu:4", body=command + "\n")
    assert "multi_gpu_without_launcher" not in codes(checked(text))


def test_one_gpu_needs_no_launcher():
    assert "multi_gpu_without_launcher" not in codes(checked(job("--time=60", "--gpus=1")))


# --- Where training reads its data -----------------------------------------------------------


@pytest.mark.parametrize(
    ("slug", "body"),
    [
        ("narval", "python train.py --data /project/def-me/d\n"),
        ("narval", "python train.py --data ~/projects/def-me/d\n"),
        ("narval", "python train.py --data=$HOME/projects/def-me/d\n"),
        ("narval", "python train.py /scratch/me/d\n"),
        ("narval", "python train.py --data $SCRATCH/d\n"),
        ("narval", "DATA=/project/d\nexport OUT=$SLURM_TMPDIR\npython train.py --data $DATA\n"),
        ("narval", 'DATA="${HOME}/projects/d"\nsrun python train.py "$DATA"\n'),
        ("narval", "python finetune.py data.path=/project/d\n"),
        ("narval", "python -m mypkg.train /project/d\n"),
        ("narval", "python main.py fit --data /project/d\n"),
        ("narval", "python train.py \\\n    --data /project/def-me/d \\\n    --epochs 10\n"),
        ("processing", "python train.py --data /project/d\n"),
    ],
)
def test_training_from_network_storage_is_flagged(slug, body):
    assert "training_from_network" in codes(checked(job("--time=60", body=body), slug))


@pytest.mark.parametrize(
    ("slug", "body"),
    [
        # $SCRATCH is the node's own SSD on the processing cluster (000): the right place.
        ("processing", "python train.py --data $SCRATCH/training_data\n"),
        ("processing", "rsync -a --delete ~/data $SCRATCH\npython train.py --data ~/data\n"),
        ("narval", STAGED + "python train.py --data $SLURM_TMPDIR/data\n"),
        ("narval", "cp -r /project/d $SLURM_TMPDIR\npython train.py --data /project/d\n"),
        ("narval", "cd $SLURM_TMPDIR && tar xf ~/projects/d.tar\npython train.py /project/d\n"),
        (
            "narval",
            f"{EVERY_NODE} tar xf /project/d.tar -C$SLURM_TMPDIR\npython train.py /project/d",
        ),
        # Inference may read from the network (000); a folder named train is no training.
        ("narval", "python infer.py --data /project/d\n"),
        ("narval", "python evaluate.py --data /project/train\n"),
        # Outputs, configuration and the program itself are not the training data.
        ("narval", "python train.py $SLURM_TMPDIR/d --output_dir ~/scratch/o --config ~/c.yaml\n"),
        ("narval", "python /project/def-me/code/train.py $SLURM_TMPDIR/d\n"),
        ("narval", "echo training on /project/d\n"),
        ("narval", "python train.py --data data/\n"),  # relative: cannot tell
    ],
)
def test_staged_or_local_training_data_is_fine(slug, body):
    assert "training_from_network" not in codes(checked(job("--time=60", body=body), slug))


def test_the_training_note_names_the_tier_and_where_to_copy():
    body = "python train.py --data /project/def-me/d\n"
    message = note(checked(job("--time=60", body=body)), "training_from_network").message
    assert "/project (Project," in message
    assert "$SLURM_TMPDIR" in message


# --- Whatever is pasted --------------------------------------------------------------------


def test_a_huge_script_is_cut_and_says_so():
    text = GOOD + "echo x\n" * (MAX_CHARS // 7)
    result = check_script(text, cluster("narval"))
    assert result.truncated
    assert [n.code for n in result.notes] == ["truncated"]
    assert "200 kB" in result.notes[0].message


def test_a_script_of_comments_only_is_not_a_batch_script():
    notes = checked("#!/bin/bash\n# nothing yet\n")
    assert [n.code for n in notes] == ["not_a_batch_script"]


@pytest.mark.parametrize(
    "text",
    [
        "srun " * 40_000,
        "A=$A$A\n" * 5_000,
        "#SBATCH " + "-" * 150_000,
        "#!/bin/bash\n#SBATCH --gres=gpu:4\n" + "xargs " * 30_000,
        "#!/bin/bash\n" + "python train.py " * 12_000 + "\n",
        "'" * 100_000,
    ],
)
def test_pathological_input_is_quick(text):
    start = time.perf_counter()
    check_script(text, cluster("narval"))
    assert time.perf_counter() - start < 2


FRAGMENTS = [
    "#!/bin/bash",
    "#SBATCH --time=1-00:00",
    "#SBATCH -t",
    "#SBATCH --gres=gpu:a100:",
    "#SBATCH --gpus-per-task=2 -n",
    "#SBATCH -N 2-4 --array=1-3%1",
    "#SBATCH --time=99999999999",
    "  #SBATCH --mem=1G",
    "DATA=$SLURM_TMPDIR/d",
    "A=$A$A",
    "cd /project/x && tar xf d.tar",
    "python train.py --data /project/d \\",
    "srun python train.py $DATA &",
    'echo "unclosed',
    "if [ -z $X ]; then torchrun train.py; fi",
    "# comment",
    "",
]


@settings(max_examples=300, deadline=None)
@given(
    st.text() | st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=20)).map("\n".join),
    st.sampled_from([c.facts for c in CLUSTERS]),
)
def test_it_never_raises(text, facts):
    result = check_script(text, facts)
    assert all(n.code and n.message for n in result.notes)


def test_the_checker_imports_no_django():
    code = "import sys, guidance.engine.script_check; sys.exit('django' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
