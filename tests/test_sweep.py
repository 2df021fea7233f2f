"""A sweep's runs, drawn over grids and line lists: every combination once, each run's folder its
own, each value one shell word in its command, and a plan that covers every run."""

import math
import re
import shlex

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from guidance.engine.sweep import (
    MAX_RUNS,
    RESERVED,
    SHORT_RUN_MINUTES,
    Grouping,
    SweepError,
    from_grid,
    from_lines,
    grid_from_text,
    grid_word,
    groups,
    plan,
    repeats,
)

names = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True).filter(lambda n: n not in RESERVED)
# Anything a user may type as a value: quotes, spaces, $(...), globs, unicode; no control chars
# or line breaks.
values = st.text(
    st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=30
)
grids = st.dictionaries(
    names, st.lists(values, min_size=1, max_size=4, unique=True), min_size=1, max_size=3
)


@given(grids)
def test_a_grid_has_every_combination_once_each_in_a_folder_of_its_own(grid):
    sweep = from_grid(grid, "python train.py")
    assert len(sweep.runs) == math.prod(len(v) for v in grid.values())
    assert len({run.values for run in sweep.runs}) == len(sweep.runs)
    assert [run.number for run in sweep.runs] == list(range(1, len(sweep.runs) + 1))
    folders = [run.folder for run in sweep.runs]
    assert len(set(folders)) == len(folders)
    for run in sweep.runs:
        assert re.fullmatch(r"run-\d{3,}(_[A-Za-z0-9._+-]*)*", run.folder), run.folder
        assert len(run.folder) <= 100
        assert dict(run.values).keys() == grid.keys()


@given(grids)
def test_each_value_reaches_the_command_as_one_word_never_as_code(grid):
    command = "python train.py " + " ".join(f"--{name} {{{name}}}" for name in grid)
    sweep = from_grid(grid, command)
    for run in sweep.runs:
        words = shlex.split(sweep.command_for(run))
        expected = ["python", "train.py"]
        for name, value in run.values:
            expected += [f"--{name}", value]
        assert words == expected


@given(grids)
def test_lines_written_as_a_shell_would_give_the_same_runs_as_the_grid(grid):
    swept = from_grid(grid, "x")
    text = "\n".join(
        " ".join(shlex.quote(f"{name}={value}") for name, value in run.values) for run in swept.runs
    )
    assert from_lines("# the runs\n\n" + text, "x").runs == swept.runs


def test_folders_say_the_run_and_its_values():
    sweep = from_grid({"lr": ["0.01", "0.1"], "seed": ["1", "2", "3"]}, "train --lr {lr}")
    assert [run.folder for run in sweep.runs][:2] == [
        "run-001_lr-0.01_seed-1",
        "run-002_lr-0.01_seed-2",
    ]
    assert sweep.command_for(sweep.runs[-1]) == "train --lr 0.1"
    odd = from_grid({"tag": ["a b/c", "$(rm -rf ~)"]}, "echo {tag} {{literal}}")
    assert [run.folder for run in odd.runs] == ["run-001_tag-a_b_c", "run-002_tag-rm_-rf"]
    assert odd.command_for(odd.runs[1]) == "echo '$(rm -rf ~)' {literal}"


@pytest.mark.parametrize(
    ("grid", "command", "field", "words"),
    [
        ({}, "x", "sweep", "at least one parameter"),
        ({"lr": []}, "x", "sweep", "lr has no values"),
        ({"lr": [""]}, "x", "sweep", "empty value"),
        ({"lr": ["a\nb"]}, "x", "sweep", "line break"),
        ({"lr": [0.1]}, "x", "sweep", "values are text"),
        ({"1lr": ["1"]}, "x", "sweep", "not a parameter name"),
        ({"DATA_PATH": ["1"]}, "x", "sweep", "the job's own variable"),
        ({"SLURM_NTASKS": ["1"]}, "x", "sweep", "the job's own variable"),
        ({"status": ["1"]}, "x", "sweep", "the job's own variable"),
        ({"HOME": ["1"]}, "x", "sweep", "the job's own variable"),
        ({"LOCAL_RANK": ["1"]}, "x", "sweep", "the job's own variable"),  # torchrun's
        ({"lr": ["1", "2", "1"]}, "x", "sweep", "lr gives '1' more than once"),
        ({"lr": ["1"]}, "train --seed {seed}", "command", "{seed}, which is not a parameter"),
        (
            {"a": [str(i) for i in range(40)], "b": [str(i) for i in range(30)]},
            "x",
            "sweep",
            "1,200 runs",
        ),
    ],
)
def test_a_sweep_it_cannot_run_is_refused_in_words_for_its_field(grid, command, field, words):
    with pytest.raises(SweepError) as refused:
        from_grid(grid, command)
    assert refused.value.field == field
    assert words in str(refused.value)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "one line per run"),
        ("lr=1\nseed=2", "every run gives the same parameters"),
        ("lr=1 lr=2", "given twice"),
        ("lr", "not name=value"),
        ("lr='1", "a quote is not closed"),
        ("# the rates\nlr=1\n\nlr=2\nlr='1'", "Line 5 gives the same values as line 2"),
    ],
)
def test_lines_it_cannot_read_are_refused_by_their_line(text, words):
    with pytest.raises(SweepError, match=re.escape(words)):
        from_lines(text, "x")


@given(st.integers(1, MAX_RUNS), st.integers(1, 3 * 24 * 60), st.integers(1, 8), st.integers(0, 20))
@example(runs=5, minutes=1, gpus=1, at_once=0)  # 4 jobs of 2 would leave one empty
def test_the_plan_runs_every_run_once_within_its_jobs(runs, minutes, gpus, at_once):
    sweep = from_grid({"i": [str(i) for i in range(runs)]}, "x")
    made = plan(sweep, minutes, gpus, at_once)
    assert made.jobs * made.runs_per_job >= runs > (made.jobs - 1) * made.runs_per_job
    assert made.minutes_per_job == made.runs_per_job * minutes
    assert made.gpu_hours == round(runs * minutes * gpus / 60, 2)
    short = minutes < SHORT_RUN_MINUTES and runs > 1
    assert made.grouping == (Grouping.GROUPED if short else Grouping.ARRAY)
    if made.grouping == Grouping.GROUPED:  # as few jobs as the longest allowed holds
        assert made.minutes_per_job <= max(24 * 60, minutes)
        assert made.jobs == math.ceil(runs / max(1, min(runs, 24 * 60 // minutes)))
    assert made.source.section == "Running many similar jobs"
    assert sum(len(g) for g in groups(range(1, runs + 1), made.runs_per_job)) == runs


def test_short_runs_go_in_one_job_where_they_fit_and_runs_on_nodes_never_group():
    sweep = from_grid({"lr": [str(i) for i in range(12)]}, "x")
    one = plan(sweep, 10, 1)
    assert (one.grouping, one.jobs, one.runs_per_job) == (Grouping.GROUPED, 1, 12)
    assert one.minutes_per_job == 120
    assert "one job running 12 of them" in one.reason
    split = plan(sweep, 10, 1, max_minutes=50)  # 5 runs fit: 3 jobs of 4, not 5, 5 and 2
    assert (split.jobs, split.runs_per_job) == (3, 4)
    assert plan(sweep, 10, 2, one_node=False).grouping == Grouping.ARRAY
    assert "%3" in plan(from_grid({"a": list("abcdef")}, "x"), 60, 1, at_once=3).reason


def test_repeats_are_runs_of_their_own():
    sweep = repeats(3, "python train.py --seed $RUN_NUMBER")
    assert [run.folder for run in sweep.runs] == ["run-001", "run-002", "run-003"]
    assert sweep.command_for(sweep.runs[0]) == "python train.py --seed $RUN_NUMBER"
    with pytest.raises(SweepError, match="1,001 runs"):
        repeats(MAX_RUNS + 1, "x")


# How people separate a grid's values: commas with or without spaces, or spaces alone.
separators = st.sampled_from([",", ", ", " ", " , ", "  ", ",  "])


@given(
    st.lists(values.filter(lambda v: v.strip() and v.isprintable()), min_size=1, max_size=5),
    separators,
    st.sampled_from(["", "  # the rates", " #", "\t# 3 values, then 2"]),
)
@example(["0.1", "0.01", "0.001"], ",", "")  # lr = 0.1,0.01,0.001 is three runs, not one
@example(["a,", "b"], " ", "")  # a comma inside quotes is the value's own
@example(["0.1", "a#b", "#1"], " ", "  # the rates")  # a comment, as in a shell, after a space
def test_a_grid_line_gives_back_each_value_as_typed_whatever_separates_them(
    typed, separator, comment
):
    def word(value: str) -> str:  # bare where it needs no quotes, as people type numbers
        bare = re.fullmatch(r"[A-Za-z0-9._-][A-Za-z0-9._#-]*", value)  # a # inside a word
        return value if bare else grid_word(value)

    grid = grid_from_text(f"lr = {separator.join(word(v) for v in typed)}{comment}")
    assert grid == {"lr": typed}


def test_a_one_run_sweeps_plan_says_one_run():
    one = from_grid({"lr": ["0.1"]}, "train --lr {lr}")
    assert plan(one, 60, 1).reason.startswith("1 run of 60 min each: one job array")
