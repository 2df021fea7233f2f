"""What a sweep adds to the script (script.py): each run's values and folders, its line in
runs.tsv, and the loop of a grouped job. Also reads them back from a script, for the job page.

A run's folders are set before anything else uses them: RESULTS_DEST is the sweep's folder's
own `run-007_lr-0.01_seed-2/`, RESULTS_DIR and CHECKPOINT_DIR are the run's, so the copy back,
the node keepers and the checkpoint plumbing written for one run serve each run unchanged, and
no run ever sees another's checkpoints."""

import re
import shlex
from dataclasses import dataclass

from guidance.engine import Placement
from guidance.engine.shell import quote
from guidance.engine.sweep import Sweep
from jobs.compose.script_spec import ScriptSpec

RUNS_TABLE = "runs.tsv"
# The columns after the parameters' own.
OUTCOME_COLUMNS = ("exit_code", "elapsed_s", "job", "node")
# One shell word, as quote() writes it (bare, in single quotes, "'" for a quote) or a hand edit
# may (in double quotes, a backslash): its quotes may hold line breaks (a command of several).
QUOTED_WORD = r"""(?:'[^']*'|"(?:[^"\\]|\\.)*"|\\.|[^\s'"\\])+"""
# `    7) RUN_NAME=run-007_lr-0.01 lr=0.01 JOB_COMMAND='...' ;;`: one run, as run_values reads it.
_CASE = re.compile(
    rf"^ {{8}}(\d+)\) RUN_NAME=(\S+)[ \t]+((?:[A-Za-z_]\w*={QUOTED_WORD}[ \t]+)+);;[ \t]*$",
    re.MULTILINE,
)
# The array's line, also as a hand edit may write it and sbatch reads it (--array 1-6, -a 1-6, a
# space or a comment after it): a re-run replaces it whole.
ARRAY_LINE = re.compile(
    r"^#SBATCH[ \t]+(?:--array[= \t]|-a)[ \t]*([^\s#]+)[ \t]*(?:#.*)?$", re.MULTILINE
)
RUNS_LINE = re.compile(r'^SWEEP_RUNS="([\d ]*)"$', re.MULTILINE)


def values(spec: ScriptSpec, checkpoint_dir: str) -> list[str]:
    """`sweep_run N` makes run N the one that runs; in an array, the task's own at once."""
    sweep = spec.sweep
    assert sweep is not None
    cases = []
    for run in sweep.runs:
        words = [f"{name}={quote(value)}" for name, value in run.values]
        words.append(f"JOB_COMMAND={quote(sweep.command_for(run))}")
        cases.append(f"        {run.number}) RUN_NAME={run.folder} {' '.join(words)} ;;")
    staged = spec.placement != Placement.SHARED
    results_dir = '"$WORK_DIR/results/$RUN_NAME"' if staged else '"$RESULTS_DEST"'
    numbers = " ".join(str(run.number) for run in sweep.runs)
    checkpoints = (
        '"$SWEEP_CHECKPOINTS/$RUN_NAME"' if spec.checkpoint_root else '"$RESULTS_DEST/checkpoints"'
    )
    lines = [
        "",
        f"# The sweep: {len(sweep.runs)} runs of the command, each with its own values, its own",
        "# folder under the results folder (results, checkpoints, log) and its own line in",
        f"# {RUNS_TABLE} there: no run sees another's files.",
        'SWEEP_DEST="$RESULTS_DEST"',
        *([f"SWEEP_CHECKPOINTS={checkpoint_dir}"] if spec.checkpoint_root else []),
        *([f'SWEEP_RUNS="{numbers}"'] if spec.grouped_runs else []),
        f"RUNS_HEADER={quote(chr(9).join(header(sweep)))}",
        'run_open=""',
        "sweep_run() {",
        '    case "$1" in',
        *cases,
        '        *) portal_stop "This sweep has no run $1." ;;',
        "    esac",
        '    RUN_NUMBER="$1"',
        '    RESULTS_DEST="$SWEEP_DEST/$RUN_NAME"',
        f"    RESULTS_DIR={results_dir}",
        f"    CHECKPOINT_DIR={checkpoints}",
        f"    export RUN_NUMBER RUN_NAME {' '.join(sweep.names)}".rstrip(),
        "    run_started=$SECONDS",
        "    run_open=1",
        "}",
        *_record(spec),
    ]
    if not spec.grouped_runs:
        lines += ["# This array task's run.", 'sweep_run "$SLURM_ARRAY_TASK_ID"']
    if spec.chain_parts:
        lines += [
            "# Which part of the run's chain this is: Slurm counts the times it requeued the task.",
            "CHAIN_PART=$((${SLURM_RESTART_COUNT:-0} + 1))",
            "export CHAIN_PART",
        ]
    return lines


_REQUEUED = re.compile(r"^#SBATCH --requeue$", re.MULTILINE)


def runs_are_chains(script: str) -> bool:
    """Whether a sweep script's runs are chains: each run's task requeues itself for its next
    part (the header requeue_lines goes with)."""
    return bool(_REQUEUED.search(script))


def runs_are_grouped(script: str) -> bool:
    """Whether a sweep script runs several runs one after another in each job (SWEEP_RUNS)."""
    return bool(RUNS_LINE.search(script))


# The last part of a chained run: requeue_lines' test, as from_script.sweep_jobs reads it.
CHAIN_PARTS = re.compile(r'^    if .* \[ "\$CHAIN_PART" -lt (\d+) \]$', re.MULTILINE)


def requeue_lines(spec: ScriptSpec) -> list[str]:
    """At the very end of finish(): the run's next part, when this one saved on Slurm's warning.
    Requeued, the task starts again from the top with its own folders (about two minutes later:
    Slurm holds a requeued job back that long) and resumes from its newest checkpoint."""
    parts = spec.chain_parts
    return [
        "    # Saved on Slurm's warning, with parts left: the run goes back in the queue, alone.",
        f'    if [ -n "${{usr1_seen:-}}" ] && [ "$code" = 0 ] && [ "$CHAIN_PART" -lt {parts} ]',
        "    then",
        '        scontrol requeue "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}" ||',
        '            echo "The run could not be put back in the queue for its next part." >&2',
        "    fi",
    ]


# A run that saved and stopped on Slurm's warning, with no part of it left to resume it, is not
# done: its line says so with timeout(1)'s code, and "Re-run failed runs" takes it up again.
STOPPED_AT_WARNING = 124


def header(sweep: Sweep) -> tuple[str, ...]:
    return ("run", "folder", *sweep.names, *OUTCOME_COLUMNS)


def _record(spec: ScriptSpec) -> list[str]:
    sweep = spec.sweep
    assert sweep is not None
    own = " ".join(f'"${name}"' for name in sweep.names)
    copy = []
    if spec.copy_back:
        copy = [f"    {spec.copy_back.command} || true"]
    earlier = []
    if spec.chain_parts:
        earlier = [
            "    # A later part of a chained run: the time its earlier parts ran too, from the",
            "    # line the last of them wrote (this task's own, not a first try's).",
            '    if [ "${CHAIN_PART:-1}" -gt 1 ]; then',
            "        run_earlier=$(awk -F '\\t' -v job=\"${job:-$SLURM_JOB_ID}\" "
            "'$(NF - 1) == job { print $(NF - 2) }' \"$SWEEP_DEST/.runs/$RUN_NAME.tsv\" "
            "2>/dev/null || true)",
            "    fi",
        ]
    return [
        "# The run's results back to its folder, then its line: each run writes its own file,",
        f"# and {RUNS_TABLE} is made again from them all, one writer at a time (flock, where",
        "# the file system takes locks), so that runs ending together lose no line.",
        "save_run() {",
        *copy,
        "    local job line status=$1" + (" run_earlier=0" if spec.chain_parts else ""),
        '    job="${SLURM_ARRAY_JOB_ID:+${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}}"',
        *_stopped(spec),
        *earlier,
        '    line=$(printf \'%s\\t\' "$RUN_NUMBER" "$RUN_NAME" '
        + (f"{own} " if own else "")
        + '"$status" "$((SECONDS - run_started'
        + (" + ${run_earlier:-0}" if spec.chain_parts else "")
        + '))" "${job:-$SLURM_JOB_ID}" '
        + '"${SLURMD_NODENAME:-$(hostname -s)}")',
        '    mkdir -p "$SWEEP_DEST/.runs"',
        '    printf \'%s\\n\' "${line%?}" > "$SWEEP_DEST/.runs/$RUN_NAME.tsv"',
        "    {",
        "        flock -w 60 9 || true",
        '        { printf \'%s\\n\' "$RUNS_HEADER"; cat "$SWEEP_DEST"/.runs/*.tsv | sort -n; } '
        '> "$SWEEP_DEST/.runs/table.$$"',
        f'        mv -f "$SWEEP_DEST/.runs/table.$$" "$SWEEP_DEST/{RUNS_TABLE}"',
        '    } 9>"$SWEEP_DEST/.runs/lock"',
        '    run_open=""',
        "}",
    ]


def _stopped(spec: ScriptSpec) -> list[str]:
    if not spec.checkpointing:
        return []  # no warning is asked for, none is heard
    last = f' && [ "${{CHAIN_PART:-1}}" -ge {spec.chain_parts} ]' if spec.chain_parts else ""
    return [
        "    # Saved and stopped on Slurm's warning, with no part left to resume it: not done.",
        f'    if [ -n "${{usr1_seen:-}}" ] && [ "$status" = 0 ]{last}; then',
        f"        status={STOPPED_AT_WARNING}",
        "    fi",
    ]


def finish_lines() -> list[str]:
    """In finish(): the run that was running when the job ended keeps its results and line."""
    return ['    [ -z "$run_open" ] || save_run "$code" || true']


def staging_note(spec: ScriptSpec) -> list[str]:
    if spec.sweep is None or spec.grouped_runs or not spec.staging:
        return []
    return [
        "# Each run of the array stages its own copy: the node-local folder is the task's own",
        "# and goes when the task ends, and a copy shared between tasks could be read while",
        "# another task still writes it or removed under a task that still reads it.",
    ]


def _no_run_after_the_warning(spec: ScriptSpec) -> list[str]:
    if not spec.checkpointing:
        return []
    return [
        "    # After Slurm's warning the job has minutes left: the runs not started wait for",
        "    # a re-run, and the job's code says one stopped early.",
        '    if [ -n "${usr1_seen:-}" ]; then',
        f'        [ "$status" != 0 ] || status={STOPPED_AT_WARNING}',
        "        break",
        "    fi",
    ]


def grouped_run(spec: ScriptSpec, launch: list[str], late_usr1: list[str]) -> list[str]:
    """The loop of a grouped job: its share of SWEEP_RUNS, one after another."""
    per = spec.grouped_runs
    indent = ["    " + line for line in [*launch, "program=$!", *late_usr1]]
    return [
        f"# This job's runs, {per} at most, one after another on the same GPUs; a run that fails",
        "# does not stop the next. The job's exit code is the last failed run's, or 0.",
        'read -r -a runs <<< "$SWEEP_RUNS"',
        "group=${SLURM_ARRAY_TASK_ID:-1}",
        "status=0",
        f'for run in "${{runs[@]:$(((group - 1) * {per})):{per}}}"; do',
        '    sweep_run "$run"',
        '    mkdir -p "$RESULTS_DIR" "$RESULTS_DEST" "$CHECKPOINT_DIR"',
        *indent,
        "    run_status=0",
        '    wait "$program" || run_status=$?',
        '    if [ "$run_status" -gt 128 ] && kill -0 "$program" 2>/dev/null; then',
        "        run_status=0",
        '        wait "$program" || run_status=$?',
        "    fi",
        '    program=""',
        '    save_run "$run_status"',
        '    [ "$run_status" = 0 ] || status=$run_status',
        *_no_run_after_the_warning(spec),
        "done",
        'exit "$status"',
    ]


@dataclass(frozen=True)
class ScriptRun:
    number: int
    folder: str
    values: tuple[tuple[str, str], ...]


def runs_in(script: str) -> list[ScriptRun]:
    """The runs a portal-written sweep script holds, with their values; [] for another script."""
    runs = []
    for found in _CASE.finditer(script):
        try:
            words = shlex.split(found.group(3))
        except ValueError:
            continue
        pairs = [tuple(word.split("=", 1)) for word in words if "=" in word]
        values = tuple((name, value) for name, value in pairs if name != "JOB_COMMAND")
        runs.append(ScriptRun(int(found.group(1)), found.group(2), values))
    return runs


def with_only(script: str, numbers: list[int]) -> str:
    """The same sweep, running only `numbers`: an array's indices, or a grouped job's runs."""
    listed = ",".join(str(n) for n in numbers)
    if RUNS_LINE.search(script):
        script = RUNS_LINE.sub(f'SWEEP_RUNS="{" ".join(map(str, numbers))}"', script, count=1)
        found = ARRAY_LINE.search(script)
        if found:  # groups of the same size as before, as many as the runs left need
            per = int(re.search(r"\(group - 1\) \* (\d+)", script).group(1))
            jobs = -(-len(numbers) // per)
            cap = found.group(1).partition("%")[2]
            array = f"1-{jobs}" + (f"%{cap}" if cap else "")
            script = ARRAY_LINE.sub(f"#SBATCH --array={array}", script, count=1)
        return script
    found = ARRAY_LINE.search(script)
    cap = found.group(1).partition("%")[2] if found else ""
    return ARRAY_LINE.sub(f"#SBATCH --array={listed}" + (f"%{cap}" if cap else ""), script, 1)
