"""A sweep job's runs as its page and the API show them: each run's values and folder (from the
script), its state (its array task's, or its group's), its exit code, time and node (from the
line the run wrote, else its task's), and what the runs add up to."""

import re
import statistics
from dataclasses import dataclass, field
from enum import StrEnum

from django.db.models import Avg
from django.utils import timezone

from guidance.engine.efficiency import EachRun, clock
from jobs.compose import sweep_script
from jobs.models import WAITING_STATES, GpuDevice, Job, JobState, JobTask, RunsTable
from jobs.runs.table import TableLine, array_numbers, grouped_runs, lines_of

# A run whose time is over SLOW times the runs' median, or under FAST times it, is named.
SLOW, FAST = 2.0, 0.5
# Below this many runs with a time, a median says little: no run is called slow or fast.
FEWEST_FOR_OUTLIERS = 3


class Outcome(StrEnum):
    """Where a run is, in the four words the summary counts (and unknown)."""

    WAITING = "waiting"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    UNKNOWN = "unknown"


@dataclass
class SweepRun:
    number: int
    folder: str
    values: tuple[tuple[str, str], ...]
    state: JobState
    exit_code: int | None
    elapsed_seconds: int | None  # so far, while it runs
    node: str
    gpu_utilization: float | None  # its task's GPUs' mean, where it has a task of its own
    output: str  # its stdout on the cluster, from the home folder; "" before Slurm has the job
    task: str  # the array task whose output it is; "" for the job's own
    outlier: str = ""  # "slow" or "fast" against the runs' median time
    again: Job | None = None  # the later job that ran it again, whose try it shows

    @property
    def outcome(self) -> Outcome:
        if self.state in WAITING_STATES or self.state == JobState.SUBMITTING:
            return Outcome.WAITING
        if self.state == JobState.UNKNOWN:
            return Outcome.UNKNOWN
        if self.state not in JobState.final():
            return Outcome.RUNNING
        if self.state == JobState.COMPLETED and self.exit_code in (0, None):
            return Outcome.COMPLETED
        return Outcome.FAILED

    @property
    def state_label(self) -> str:
        return JobState(self.state).label

    @property
    def elapsed(self) -> str:
        return clock(self.elapsed_seconds)

    @property
    def name(self) -> str:
        """Run 3 (lr=0.1 seed=2): how the summary names it."""
        values = " ".join(f"{name}={value}" for name, value in self.values)
        return f"run {self.number}" + (f" ({values})" if values else "")


@dataclass
class Runs:
    runs: list[SweepRun]
    names: tuple[str, ...]  # the parameters, in the script's order
    grouped: bool  # several runs one after another in a job (or array task)
    note: str = ""  # why exit codes or times are missing, when they are
    read_at: object = None  # when the runs' lines were last read from the cluster
    counts: dict[Outcome, int] = field(default_factory=dict)
    gpu_hours: float | None = None
    median_seconds: float | None = None

    @property
    def median(self) -> str:
        return clock(self.median_seconds)

    @property
    def failed(self) -> list[SweepRun]:
        return [run for run in self.runs if run.outcome == Outcome.FAILED]

    @property
    def slow(self) -> list[SweepRun]:
        return [run for run in self.runs if run.outlier == "slow"]

    @property
    def fast(self) -> list[SweepRun]:
        return [run for run in self.runs if run.outlier == "fast"]


def is_sweep(job: Job) -> bool:
    return bool(job.script) and bool(sweep_script.runs_in(job.script))


def reruns_of(job: Job) -> list[Job]:
    """The jobs that ran the sweep's failed runs again, and those that ran theirs again."""
    found, newest = [], [job.pk]
    while newest:
        again = list(Job.objects.filter(rerun_of__in=newest))
        found += again
        newest = [later.pk for later in again]
    return found


def runs_of(job: Job) -> Runs | None:
    """The job's runs, or None when its script is not a portal sweep."""
    in_script = {run.number: run for run in sweep_script.runs_in(job.script or "")}
    if not in_script:
        return None
    table = RunsTable.objects.filter(job=job).first()
    lines = lines_of(table.text, job.slurm_id) if table and job.slurm_id else {}
    tasks = {task.task_id: task for task in JobTask.objects.filter(job=job)}
    grouped = grouped_runs(job.script)
    if grouped:
        runs = _grouped(job, grouped, in_script, lines, tasks, read=bool(table and not table.error))
    else:
        runs = _arrayed(job, in_script, lines, tasks)
    if table and job.slurm_id:
        _run_again(runs, table.text, reruns_of(job))
    names = next(iter(in_script.values())).values
    found = Runs(
        runs=runs,
        names=tuple(name for name, _ in names),
        grouped=grouped is not None,
        note=_note(job, table),
        read_at=table.read_at if table else None,
    )
    _sum_up(found, _gpus_per_run(job))
    return found


def each_run(job: Job, found: Runs | None = None) -> EachRun | None:
    """A finished sweep's runs as its time advice reads them (each run's duration, not the sum
    of its tasks); None for a job that is no sweep."""
    found = found if found is not None else runs_of(job)
    if found is None:
        return None
    if sweep_script.runs_are_chains(job.script):
        # Each run is a chain of parts: a task's time is one part's, so it sizes nothing.
        return EachRun(ended=0, longest_seconds=0, given_seconds=None)
    # Runs that completed: a failed run may have stopped before doing its work.
    timed = [
        r.elapsed_seconds
        for r in found.runs
        if r.outcome == Outcome.COMPLETED and r.elapsed_seconds is not None
    ]
    # A group stopped at its time limit may have stopped the very run that was writing its line.
    timed_out = any(r.state == JobState.TIMEOUT for r in found.runs) or (
        found.grouped and job.state == JobState.TIMEOUT
    )
    # Even with no run completed: so that nothing sizes the runs from their sum.
    return EachRun(
        ended=len(timed),
        longest_seconds=max(timed, default=0),
        given_seconds=_given_each_run(job, found),
        timed_out=timed_out,
    )


def _given_each_run(job: Job, found: Runs) -> int | None:
    """What each run was given: its duration as composed (the field the advice changes), else an
    array task's time limit; a group's limit serves several runs and says nothing of one."""
    hours = job.composition.fields.get("hours") if job.composition else None
    try:
        if hours and float(hours) > 0:
            return round(float(hours) * 3600)
    except (TypeError, ValueError):
        pass  # not a number: the composition was saved by hand; the script's limit then
    return None if found.grouped else job.task_time_limit_seconds


def _arrayed(
    job: Job, in_script: dict, lines: dict[int, TableLine], tasks: dict[str, JobTask]
) -> list[SweepRun]:
    """One run per array task, the task's index its number."""
    numbers = array_numbers(job.script) or sorted(in_script)
    use = _gpu_use(job)
    now = timezone.now()
    runs = []
    for number in numbers:
        if number not in in_script:
            continue
        task, line = tasks.get(str(number)), lines.get(number)
        if task:
            state = JobState(task.state)
        elif job.is_final:
            # Never started (cancelled while waiting): the array's end is its end.
            state = JobState(job.state) if job.state != JobState.COMPLETED else JobState.UNKNOWN
        else:
            state = JobState.PENDING if job.slurm_id else JobState(job.state)
        exit_code = task.exit_code if task and task.is_final else None
        elapsed = None
        if task and task.started:
            elapsed = round(((task.ended or now) - task.started).total_seconds())
        node = task.nodes if task else ""
        if line:  # the run's own word on how it ended
            # Slurm's name for the node first: a node's hostname need not be its Slurm name.
            exit_code, node = line.exit_code, node or line.node
            elapsed = line.elapsed_seconds if line.elapsed_seconds is not None else elapsed
            if state == JobState.COMPLETED and exit_code not in (0, None):
                state = JobState.FAILED
        runs.append(
            _run(
                job,
                in_script[number],
                str(number),
                state=state,
                exit_code=exit_code,
                elapsed_seconds=elapsed,
                node=node,
                gpu_utilization=use.get(str(number)),
            )
        )
    return runs


def _run(job: Job, run: sweep_script.ScriptRun, task_id: str, **outcome) -> SweepRun:
    """A run of the script, with how it went and the output of the task that runs it."""
    return SweepRun(
        number=run.number,
        folder=run.folder,
        values=run.values,
        output=_output(job, task_id),
        task=task_id if job.slurm_id else "",
        **outcome,
    )


def _grouped(
    job: Job,
    grouped: tuple[list[int], int],
    in_script: dict,
    lines: dict[int, TableLine],
    tasks: dict[str, JobTask],
    read: bool,
) -> list[SweepRun]:
    """Runs one after another in a job, or in each task of an array of such groups: a run's
    state is its line's, else its group's (the first without a line in a running group runs)."""
    numbers, per = grouped
    arrayed = array_numbers(job.script) is not None
    runs: list[SweepRun] = []
    running_group: set[int] = set()
    for index, number in enumerate(numbers):
        if number not in in_script:
            continue
        group = index // per + 1
        task = tasks.get(str(group)) if arrayed else None
        if task:
            group_state, node = JobState(task.state), task.nodes
        elif arrayed and not job.is_final:
            group_state, node = JobState.PENDING, ""
        else:
            group_state, node = JobState(job.state), job.nodes
        line = lines.get(number)
        exit_code = elapsed = None
        if line:
            state = JobState.COMPLETED if line.exit_code == 0 else JobState.FAILED
            exit_code, elapsed = line.exit_code, line.elapsed_seconds
            node = node or line.node  # Slurm's name for it first, as for an array's run
        elif group_state in WAITING_STATES or group_state == JobState.SUBMITTING:
            state, node = group_state, ""
        elif group_state not in JobState.final():
            # Runs go in turn: the group's first run without a line is the one running.
            state = JobState.PENDING if group in running_group else group_state
            running_group.add(group)
            node = node if state == group_state else ""
        elif group_state == JobState.COMPLETED and not read:
            # The job exits with its last failed run's code: 0 says every run exited with 0.
            state, exit_code = JobState.COMPLETED, 0
        elif group_state == JobState.COMPLETED or not read:
            state = JobState.UNKNOWN
        else:
            state = group_state  # it ended (timed out, cancelled) before this run wrote its line
        task_id = str(group) if arrayed else ""
        runs.append(
            _run(
                job,
                in_script[number],
                task_id,
                state=state,
                exit_code=exit_code,
                elapsed_seconds=elapsed,
                node=node,
                gpu_utilization=None,  # the group's GPUs serve several runs in turn
            )
        )
    return runs


def _run_again(runs: list[SweepRun], text: str, reruns: list[Job]) -> None:
    """A run that a later job ran again wrote its line anew, over its first try's: it ends as
    that try did, which its own job's page shows with its output."""
    submitted = {again.slurm_id: again for again in reruns if again.slurm_id}
    lines = lines_of(text, *submitted)
    for run in runs:
        line = lines.get(run.number)
        if line is None:
            continue
        again = submitted[line.job.partition("_")[0]]
        run.state = JobState.COMPLETED if line.exit_code == 0 else JobState.FAILED
        run.exit_code, run.elapsed_seconds = line.exit_code, line.elapsed_seconds
        run.node = _node_again(again, line)
        run.gpu_utilization, run.output, run.task, run.again = None, "", "", again


def _node_again(again: Job, line: TableLine) -> str:
    """Slurm's name for the node the run ran on again, else the hostname it wrote."""
    _, _, task = line.job.partition("_")
    if not task:
        return again.nodes or line.node
    found = JobTask.objects.filter(job=again, task_id=task).values_list("nodes", flat=True)
    return found.first() or line.node


def _output(job: Job, task: str) -> str:
    if not job.slurm_id:
        return ""
    part = f"{job.slurm_id}_{task}" if task else job.slurm_id
    return f"{job.job_dir}/slurm-{part}.out"


def _gpu_use(job: Job) -> dict[str, float]:
    """Each array task's GPUs' mean utilization, from its sampler's devices."""
    rows = (
        GpuDevice.objects.filter(job=job, mean_utilization__isnull=False)
        .exclude(task_id="")
        .values("task_id")
        .annotate(mean=Avg("mean_utilization"))
    )
    return {row["task_id"]: row["mean"] for row in rows}


_GRES_GPUS = re.compile(r"^#SBATCH --gres=\S*?gpu(?::[A-Za-z0-9._-]+)?:(\d+)", re.MULTILINE)
_GPUS = re.compile(r"^#SBATCH --gpus(?:-per-node)?=(?:[A-Za-z0-9._-]+:)?(\d+)$", re.MULTILINE)
_NODES = re.compile(r"^#SBATCH --nodes=(\d+)$", re.MULTILINE)


def _gpus_per_run(job: Job) -> int | None:
    """The GPUs each run holds: what Slurm allocated, else what the script asks for."""
    if job.gpus:
        return job.gpus
    if found := _GRES_GPUS.search(job.script):
        nodes = _NODES.search(job.script)
        return int(found.group(1)) * (int(nodes.group(1)) if nodes else 1)
    found = _GPUS.search(job.script)
    return int(found.group(1)) if found else None


def _sum_up(found: Runs, gpus: int | None) -> None:
    found.counts = {outcome: 0 for outcome in Outcome}
    for run in found.runs:
        found.counts[run.outcome] += 1
    timed = [run.elapsed_seconds for run in found.runs if run.elapsed_seconds is not None]
    if gpus is not None and timed:
        found.gpu_hours = sum(timed) * gpus / 3600
    ended = [
        run
        for run in found.runs
        if run.elapsed_seconds is not None and run.outcome in (Outcome.COMPLETED, Outcome.FAILED)
    ]
    if len(ended) < FEWEST_FOR_OUTLIERS:
        return
    found.median_seconds = statistics.median(run.elapsed_seconds for run in ended)
    for run in ended:
        if found.median_seconds and run.elapsed_seconds > SLOW * found.median_seconds:
            run.outlier = "slow"
        elif run.elapsed_seconds < FAST * found.median_seconds:
            run.outlier = "fast"


def _note(job: Job, table: RunsTable | None) -> str:
    if table and table.error:
        return table.error
    if job.slurm_id and job.started and table is None and job.is_final:
        return "The runs' own lines (runs.tsv in the results folder) have not been read."
    return ""


SORTS = ("run", "state", "exit", "elapsed", "node", "gpu")


def sorted_runs(runs: Runs, sort: str) -> tuple[list[SweepRun], str]:
    """The runs in the order `sort` names (a column, or "param:<name>"; a leading "-" reverses
    it), runs without a value last; and the sort applied ("run" for one not known)."""
    column = sort.removeprefix("-")
    if column not in SORTS and column.removeprefix("param:") not in runs.names:
        return list(runs.runs), "run"
    if column.startswith("param:"):
        names = dict.fromkeys(runs.names)
        at = list(names).index(column.removeprefix("param:"))

        def value(run: SweepRun) -> object:
            return _comparable(run.values[at][1]) if at < len(run.values) else None
    else:

        def value(run: SweepRun) -> object:
            return {
                "run": run.number,
                "state": run.state_label,
                "exit": run.exit_code,
                "elapsed": run.elapsed_seconds,
                "node": run.node or None,
                "gpu": run.gpu_utilization,
            }[column]

    known = [run for run in runs.runs if value(run) is not None]
    unknown = [run for run in runs.runs if value(run) is None]
    known.sort(key=lambda run: (value(run), run.number), reverse=sort.startswith("-"))
    return known + unknown, sort


def _comparable(text: str) -> tuple[int, float | str]:
    """Numbers by value, then words: 0.01 before 0.1 before "adam"."""
    try:
        return (0, float(text))
    except ValueError:
        return (1, text)
