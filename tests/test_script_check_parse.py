"""Check my script: how sbatch reads a pasted script, and the values of the options checked."""

import math

import pytest

from guidance.engine.script_check import gpu_request, gres_gpus, parse_script, parse_time_limit

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
    assert parse_time_limit(value) == minutes


@pytest.mark.parametrize(
    "value",
    ["", "3h", "1.5", "1:2:3:4", "1-2-3", ":30", "1:-5", "-5", "1-2:3:4:5", "ten", "1e3", "1:30.5"],
)
def test_it_rejects_what_sbatch_rejects(value):
    assert parse_time_limit(value) is None


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
