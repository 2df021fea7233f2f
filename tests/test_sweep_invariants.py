"""What must hold for every sweep the composer writes, whatever the grid, the values, the site and
the length of the runs: bash reads back each run's values, command and folders as the user meant
them, no two runs share a results or checkpoint folder, the script lists exactly the sweep's runs,
the array or the groups run each once, and "re-run failed runs" runs exactly those. Hypothesis draws
the sweeps (INVARIANT_EXAMPLES // 5 of them)."""

import os
import re
import shlex
import subprocess

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from guidance.engine.shell import variables_in
from guidance.engine.slurm_time import parse_seconds
from guidance.engine.sweep import RESERVED, SweepError, from_grid, grid_word
from guidance.facts import cluster_facts
from guidance.models import Cluster
from jobs.compose.forms import ComposeForm
from jobs.compose.from_form import compose
from jobs.compose.sweep_script import runs_in, with_only
from jobs.plans.making import _gpu_hours
from tests.test_composer_invariants import FEDERATION_ENV

EXAMPLES = max(1, int(os.environ.get("INVARIANT_EXAMPLES", "250")) // 5)
ENV = FEDERATION_ENV | {"PATH": "/usr/bin:/bin"}
names = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(lambda n: n not in RESERVED)
# What users put in values: numbers, paths, quotes, spaces, $(...), globs, unicode; one line each.
values = st.text(
    st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=12
).filter(lambda v: v.strip(" ,") == v and "#" not in v[:1])
grids = st.dictionaries(
    names, st.lists(values, min_size=1, max_size=3, unique=True), min_size=1, max_size=3
)


def _grid_text(grid: dict[str, list[str]]) -> str:
    return "\n".join(f"{name} = {' '.join(grid_word(v) for v in vs)}" for name, vs in grid.items())


@st.composite
def sweeps(draw) -> tuple[dict, dict]:
    cluster = draw(st.sampled_from(["narval", "processing", "cedar"]))
    grid = draw(grids)
    processing = cluster == "processing"
    form = {
        "cluster": cluster,
        "job_name": "sw",
        "account": "" if processing else "def-ada",
        "workload": "training",
        "dataset_gb": draw(st.sampled_from(["2", "50", "600"])),
        "file_count": "",
        "data_path": "/project/d/set.tar" if processing else "$PROJECT/set.tar",
        "gpu_count": draw(st.sampled_from(["1", "2"])),
        "hours": draw(st.sampled_from(["0.1", "0.4", "2", "20"])),
        "nodes": draw(st.sampled_from(["1", "1", "2"])),
        "similar_runs": "1",
        "environment": "none",
        "sweep_grid": _grid_text(grid),
        "runs_at_once": draw(st.sampled_from(["", "", "2"])),
        "command": "python train.py " + " ".join(f"--{n} {{{n}}}" for n in grid),
        "results_dir": "/project/r" if processing else "$PROJECT/results",
        "time_limit": draw(st.sampled_from(["", "", "", "0:20:00", "3:00:00"])),
    }
    if draw(st.booleans()):
        form["checkpointing"] = "on"
    if form["nodes"] == "2" or form["gpu_count"] == "2":
        form["multi_gpu"] = "on"
    return form, grid


def _run_values(script: str, number: int, names: list[str]) -> dict[str, str]:
    """The script up to its first run, then `sweep_run number`, in bash: what the run gets."""
    body = script.split("set -euo pipefail\n", 1)[1]
    prefix = body.split("\n# This array task's run.\n")[0].split("\n# Check the data")[0]
    asked = ["RUN_NUMBER", "RUN_NAME", "RESULTS_DEST", "RESULTS_DIR", "CHECKPOINT_DIR"]
    asked += ["JOB_COMMAND", *names]
    program = (
        f"{prefix}\nsweep_run {number}\n"
        f"for _asked in {' '.join(asked)}; do printf '%s\\0' \"${{!_asked}}\"; done\n"
        # Exported, so that the program sees them too.
        f"env -0 | grep -z -E '^({'|'.join(names or ['RUN_NUMBER'])})='"
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, env=ENV, check=True)
    printed = done.stdout.decode().split("\0")[:-1]
    found = dict(zip(asked, printed[: len(asked)], strict=True))
    found["exported"] = dict(line.split("=", 1) for line in printed[len(asked) :])
    return found


def _selected(script: str) -> list[int]:
    """The runs the script's array tasks or groups run, as bash and Slurm read the script."""
    array = re.search(r"^#SBATCH --array=(\S+)$", script, re.MULTILINE)
    indices = []
    for part in array.group(1).partition("%")[0].split(",") if array else ["1"]:
        low, _, high = part.partition("-")
        indices += range(int(low), int(high or low) + 1)
    loop = re.search(r"^SWEEP_RUNS=.*$", script, re.MULTILINE)
    if not loop:
        return indices
    header = re.search(r"^for run in .*; do$", script, re.MULTILINE).group()
    program = f'{loop.group()}\nread -r -a runs <<< "$SWEEP_RUNS"\n'
    program += "for group in " + " ".join(map(str, indices)) + f"; do\n{header} echo $run; done\n"
    program += "done\n"
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True)
    return [int(line) for line in done.stdout.split()]


@pytest.mark.django_db
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=sweeps(), failed=st.sets(st.integers(1, 27), max_size=5))
def test_every_run_of_a_sweep_is_its_own(seeded, data, failed):
    form_data, grid = data
    form = ComposeForm(form_data)
    composed = compose(form)
    if composed is None:  # refused: with the reason beside a field
        assert form.errors, form_data
        event("refused")
        return
    script = composed.script
    assert subprocess.run(["bash", "-n"], input=script.encode()).returncode == 0
    sweep = composed.spec.sweep
    event("grouped" if composed.spec.grouped_runs else "array")
    names = list(grid)
    # The script holds the sweep's runs, each with its values, and runs each exactly once.
    assert [(r.number, r.folder, r.values) for r in runs_in(script)] == [
        (r.number, r.folder, r.values) for r in sweep.runs
    ]
    assert sorted(_selected(script)) == [run.number for run in sweep.runs]
    # Each run's values reach it as written, in its command and exported; its folders are its own.
    seen_results, seen_checkpoints = set(), set()
    for run in sweep.runs:
        got = _run_values(script, run.number, names)
        assert got["RUN_NUMBER"] == str(run.number)
        assert got["RUN_NAME"] == run.folder
        assert {name: got[name] for name in names} == dict(run.values)
        assert got["exported"] == dict(run.values)
        words = shlex.split(got["JOB_COMMAND"])
        assert words[3::2] == [value for _, value in run.values], words
        assert got["RESULTS_DEST"].endswith(f"/{run.folder}")
        assert got["CHECKPOINT_DIR"].split("/")[-2:][0] in (run.folder, "sw"), got
        assert run.folder in got["CHECKPOINT_DIR"] and run.folder in got["RESULTS_DIR"]
        seen_results.add(got["RESULTS_DEST"])
        seen_checkpoints.add(got["CHECKPOINT_DIR"])
    assert len(seen_results) == len(seen_checkpoints) == len(sweep.runs)
    # Each run's work fits in what its job asks for (a grouped job: all the runs it holds; a
    # chained run: all its parts), or a warning beside a field says it does not.
    seconds = parse_seconds(re.search(r"^#SBATCH --time=(\S+)$", script, re.M).group(1))
    per_job = composed.spec.grouped_runs or 1
    parts = composed.spec.chain_parts or 1
    needed = float(form_data["hours"]) * 3600 * per_job
    if parts * seconds < needed - 60:
        warned = {
            n.field for n in (*composed.recommendation.warnings, *composed.recommendation.errors)
        }
        assert warned & {"time_limit", "hours", "checkpointing"}, (form_data, seconds, parts)
    if composed.spec.chain_parts:
        assert "#SBATCH --requeue" in script and form_data.get("checkpointing") == "on"
    # Re-run failed runs: exactly those, each once.
    again = sorted(n for n in failed if n <= len(sweep.runs)) or [len(sweep.runs)]
    rerun = with_only(script, again)
    assert sorted(_selected(rerun)) == again
    assert runs_in(rerun) == runs_in(script)


# What the script names for itself, outside the runs' lines and the command: an assignment, a
# read ($NAME, ${NAME...}), a `local`, `export`, `for` or `read` of it.
_NAMED = re.compile(
    r"(?<![\w$-])([A-Za-z_]\w*)=|\$\{?([A-Za-z_]\w*)|\bfor ([A-Za-z_]\w*) in\b"
    r"|\bread -r -a ([A-Za-z_]\w*)|\b(?:local|export)((?: +[A-Za-z_]\w*)+)"
)


@pytest.mark.django_db
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=sweeps())
def test_no_parameter_can_take_a_name_the_script_uses_for_itself(seeded, data):
    form_data, grid = data
    composed = compose(ComposeForm(form_data))
    if composed is None:
        return
    spec = composed.spec
    # The site's variables are read before any run sets its values: the program's to have.
    paths = (spec.data_source, spec.results_dest, spec.checkpoint_root, spec.stage_root)
    site = {name for path in paths for name in variables_in(path)}
    site |= {name for name, _ in spec.site_variables}
    named = set()
    for line in composed.script.splitlines():
        if re.match(r" {8}\d+\) RUN_NAME=|JOB_COMMAND=|\s*#", line):
            continue
        for found in _NAMED.finditer(line):
            named.update(" ".join(filter(None, found.groups())).split())
    for name in sorted(named - site - set(grid)):
        with pytest.raises(SweepError, match="the job's own variable"):
            from_grid({name: ["1"]}, "x")


def test_no_parameter_can_take_a_name_bash_sets_itself():
    """RANDOM or SECONDS would reach the program as bash's value, UID would stop the script."""
    clean = subprocess.run(
        ["env", "-i", "bash", "--norc", "--noprofile", "-c", "compgen -v"],
        capture_output=True,
        text=True,
        check=True,
    )
    for name in clean.stdout.split():
        with pytest.raises(SweepError, match="the job's own variable"):
            from_grid({name: ["1"]}, "x")


@pytest.mark.django_db
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=sweeps(), failed=st.sets(st.integers(1, 27), min_size=1, max_size=5))
def test_a_plan_of_a_sweep_script_costs_what_the_composer_says(seeded, data, failed):
    """A program's plan of the script (jobs.plans) counts every job the sweep makes, as the
    composer does; and a re-run's, only the runs it runs again."""
    form_data, _ = data
    composed = compose(ComposeForm(form_data))
    if composed is None:
        return
    event("chained runs" if composed.spec.chain_parts else "one job a run or a group")
    facts = cluster_facts(Cluster.objects.get(slug=form_data["cluster"]))
    said = composed.recommendation.gpu_hours
    assert _gpu_hours(composed.script, facts).total == pytest.approx(said.total, rel=1e-6)
    again = sorted(n for n in failed if n <= len(composed.spec.sweep.runs)) or [1]
    rerun = with_only(composed.script, again)
    jobs = -(-len(again) // composed.spec.grouped_runs) if composed.spec.grouped_runs else 0
    expected = said.per_job * said.parts * (jobs or len(again))
    assert _gpu_hours(rerun, facts).total == pytest.approx(expected, rel=1e-6)
