"""How well a job used what it asked for (seff plus its GPUs), and what to ask for next time."""

import math
from collections.abc import Sequence
from dataclasses import dataclass

from guidance.engine import sources
from guidance.engine.gpu_use import (
    FEWER_GPUS,
    JOULES_PER_KWH,
    GpuUse,
    card_memory_gb,
    find_gpu_type,
    gpus_needed,
    mean_of,
    other_gpu_type,
    peak_memory_gb,
)
from guidance.engine.slurm_time import format_time
from guidance.engine.sources import Source
from guidance.engine.types import Cluster

# A quarter more than the last run took: runs vary, and a job killed at its limit loses its work.
TIME_MARGIN = 1.25
# A job that ran out of time gets half as much again.
TIMEOUT_FACTOR = 1.5
# Memory: a change is suggested when the job used less than half of it, in whole gigabytes.
MEMORY_USED_BELOW = 0.5
MEMORY_STEP_MB = 1024
# A job killed for its memory gets half as much again: what it would have used is unknown.
OUT_OF_MEMORY_FACTOR = 1.5


@dataclass(frozen=True)
class EachRun:
    """A sweep's runs, whose duration is asked per run: its time advice is per run, never from
    the sum of its tasks (six 10-minute runs are not one hour-long run)."""

    ended: int  # runs that completed, with a time
    longest_seconds: int  # of those, and of the runs stopped at the time limit
    given_seconds: int | None  # what each run was given: its duration as composed, else its limit
    timed_out: bool = False  # a run, or the job running runs in turn, hit its time limit
    grouped: bool = False  # several runs one after another in each job


@dataclass(frozen=True)
class JobFacts:
    """What Slurm accounted for a finished job (sacct)."""

    gpus: int | None = None
    cpus: int | None = None
    elapsed_seconds: int | None = None
    time_limit_seconds: int | None = None
    cpu_seconds: float | None = None
    max_rss_mb: float | None = None
    requested_memory_mb: float | None = None
    gpu_type: str = ""
    timed_out: bool = False
    out_of_memory: bool = False
    # Failed, cancelled or killed for its memory: its time says nothing of what the work needs
    # (a crash in the first minute is no reason to ask for 15 minutes next time).
    ended_early: bool = False
    gpu_energy_j: float | None = None  # its GPUs', from NVML's counter; None: unknown
    # An array's: elapsed and time_limit add its tasks up, these are one task's.
    longest_task_seconds: int | None = None
    task_time_limit_seconds: int | None = None
    # Its tasks are the parts of one run, each resuming the last (a chain): the work is their sum.
    chain: bool = False
    each_run: EachRun | None = None  # a sweep's runs: its time advice is theirs


@dataclass(frozen=True)
class Usage:
    """What a job used of what it was given, as seff prints it; None where sacct has not said."""

    cpu_percent: float | None  # CPU time over CPUs x elapsed
    memory_percent: float | None  # peak RSS over the memory requested
    time_percent: float | None  # elapsed over the time limit
    gpu_hours: float | None  # used: GPUs x elapsed
    elapsed: str  # H:MM:SS, "" when not known
    time_limit: str
    gpu_hours_requested: float | None = None  # GPUs x time limit
    energy_kwh: float | None = None  # None: unknown, never 0 for "not measured"


def usage_of(facts: JobFacts) -> Usage:
    gpu_seconds = _product(facts.gpus, facts.elapsed_seconds)
    requested = _product(facts.gpus, facts.time_limit_seconds)
    energy = facts.gpu_energy_j
    return Usage(
        gpu_hours_requested=requested / 3600 if requested else None,
        energy_kwh=energy / JOULES_PER_KWH if energy is not None else None,
        elapsed=clock(facts.elapsed_seconds),
        time_limit=clock(facts.time_limit_seconds),
        cpu_percent=_percent(facts.cpu_seconds, _product(facts.cpus, facts.elapsed_seconds)),
        memory_percent=_percent(facts.max_rss_mb, facts.requested_memory_mb),
        time_percent=_percent(facts.elapsed_seconds, facts.time_limit_seconds),
        gpu_hours=gpu_seconds / 3600 if gpu_seconds else None,
    )


@dataclass(frozen=True)
class Suggestion:
    field: str  # the composer's field it changes
    value: str  # as the composer's form takes it
    change: str  # in a few words, for the button's list
    reason: str
    source: Source | None = None


@dataclass(frozen=True)
class EfficiencyReport:
    facts: JobFacts
    gpus: tuple[GpuUse, ...]
    target: int
    gpu_mean: float | None
    under_target_percent: float | None  # share of the sampled time under the target
    peak_memory_gb: float | None
    card_memory_gb: float | None
    cpu_percent: float | None
    memory_percent: float | None
    time_percent: float | None
    suggestions: tuple[Suggestion, ...]
    gpu_hours: float | None = None  # used: GPUs x elapsed
    gpu_hours_requested: float | None = None  # GPUs x time limit
    energy_kwh: float | None = None  # its GPUs', where NVML reports it

    # As seff prints them: H:MM:SS.
    @property
    def elapsed(self) -> str:
        return clock(self.facts.elapsed_seconds)

    @property
    def time_limit(self) -> str:
        return clock(self.facts.time_limit_seconds)

    @property
    def one_task(self) -> str:
        """An array's longest task against each task's limit ("" for a job of one task), since
        its elapsed time and limit add its tasks up."""
        limit, longest = self.facts.task_time_limit_seconds, self.facts.longest_task_seconds
        if not limit or longest is None or limit == self.facts.time_limit_seconds:
            return ""
        return f"{clock(self.facts.longest_task_seconds)} of {clock(limit)}"

    @property
    def cpu_time(self) -> str:
        return clock(self.facts.cpu_seconds)

    @property
    def core_walltime(self) -> str:
        return clock(_product(self.facts.cpus, self.facts.elapsed_seconds))


def report(facts: JobFacts, uses: Sequence[GpuUse], cluster: Cluster) -> EfficiencyReport:
    target = cluster.policy.utilization_target_percent
    known = [u for u in uses if u.known]
    sampled = sum(u.seconds for u in known)
    used = usage_of(facts)
    return EfficiencyReport(
        facts=facts,
        gpus=tuple(uses),
        target=target,
        gpu_mean=mean_of(uses),
        under_target_percent=(
            100 * sum(u.under_seconds for u in known) / sampled if sampled else None
        ),
        peak_memory_gb=peak_memory_gb(uses),
        card_memory_gb=card_memory_gb(uses),
        cpu_percent=used.cpu_percent,
        memory_percent=used.memory_percent,
        time_percent=used.time_percent,
        suggestions=tuple(suggest(facts, uses, cluster)),
        gpu_hours=used.gpu_hours,
        gpu_hours_requested=used.gpu_hours_requested,
        energy_kwh=used.energy_kwh,
    )


def suggest(facts: JobFacts, uses: Sequence[GpuUse], cluster: Cluster) -> list[Suggestion]:
    """The next run's settings, each with its reason: time, memory, GPU count, GPU type."""
    out = resource_suggestions(facts)
    mean = mean_of(uses)
    target = cluster.policy.utilization_target_percent
    gpus = facts.gpus or sum(1 for u in uses if u.known)
    if mean is not None and gpus and mean < target:
        needed = gpus_needed(gpus, mean, target)
        if needed < gpus:
            out.append(
                Suggestion(
                    "gpu_count",
                    str(needed),
                    f"{needed} GPU{'s' if needed != 1 else ''} instead of {gpus}",
                    f"Its {gpus} GPUs were {mean:.0f}% busy on average: {needed} at {target}% "
                    "do the same work, and wait less in the queue.",
                    FEWER_GPUS,
                )
            )
        peak = peak_memory_gb(uses)
        if other := other_gpu_type(cluster, facts.gpu_type, peak):
            current = find_gpu_type(cluster, facts.gpu_type)
            used = (
                f", and its {other.memory_gb:g} GB hold the {peak:.0f} GB it used" if peak else ""
            )
            out.append(
                Suggestion(
                    "gpu_type",
                    other.name,
                    f"{other.name} instead of {current.name}",
                    f"{cluster.name} keeps {current.name} for jobs near 100% busy; at "
                    f"{mean:.0f}% this job belongs on {other.name}{used}.",
                    current.source or sources.PROCESSING_TRAINING,
                )
            )
    return out


def suggested_minutes(elapsed_seconds: float, margin: float = TIME_MARGIN) -> int:
    """elapsed x margin, rounded up to a quarter hour (to half hours past 2 hours, whole hours
    past 12): never less than the run took."""
    minutes = elapsed_seconds * margin / 60
    step = 15 if minutes <= 120 else 30 if minutes <= 720 else 60
    return max(step, math.ceil(round(minutes / step, 6)) * step)


def resource_suggestions(facts: JobFacts) -> list[Suggestion]:
    """The next run's time and memory, from the accounting alone (no GPU samples, no cluster)."""
    return [s for s in (_time(facts), _memory(facts)) if s is not None]


def _more_memory(facts: JobFacts) -> Suggestion | None:
    asked = facts.requested_memory_mb
    if not asked:
        return None
    megabytes = math.ceil(round(asked * OUT_OF_MEMORY_FACTOR / MEMORY_STEP_MB, 6)) * MEMORY_STEP_MB
    return Suggestion(
        "memory",
        f"{megabytes}M",
        f"--mem={megabytes}M instead of {asked:.0f}M",
        f"It was killed for using more than the {asked:.0f} MB it asked for: ask for at least "
        f"half as much again ({megabytes} MB), or make it use less (smaller batches, fewer data "
        "loader workers).",
        sources.SBATCH_ELEMENTS,
    )


def _memory(facts: JobFacts) -> Suggestion | None:
    """Less memory when the job used under half of it: the rest was kept from other jobs."""
    if facts.out_of_memory:
        return _more_memory(facts)
    used, asked = facts.max_rss_mb, facts.requested_memory_mb
    if not used or not asked or used >= asked * MEMORY_USED_BELOW:
        return None
    steps = math.ceil(round(used * TIME_MARGIN / MEMORY_STEP_MB, 6))
    megabytes = max(1, steps) * MEMORY_STEP_MB
    if megabytes >= asked:
        return None
    return Suggestion(
        "memory",
        f"{megabytes}M",
        f"--mem={megabytes}M instead of {asked:.0f}M",
        f"It used at most {used:.0f} MB of the {asked:.0f} MB it asked for: {megabytes} MB "
        "leaves a quarter more than it used, and memory a job holds is kept from other jobs.",
        sources.SBATCH_ELEMENTS,
    )


@dataclass(frozen=True)
class _Said:
    """How a time suggestion is worded: for one job, or for each run of a sweep."""

    change: str
    out_of_time: str
    took: str


_ONE_JOB = _Said(
    change="--time={ask} instead of {had}",
    out_of_time="It ran out of time after {had}: ask for half as much again, or save "
    "checkpoints and resume in a chain of shorter jobs.",
    took="It ran {took} of the {had} it asked for: {ask} leaves a quarter more than it took, "
    "and shorter jobs are more likely to start sooner.",
)
# A chain's duration is the whole chain's: its parts' times added up, in the parts it needs.
_CHAIN = _Said(
    change="{ask} in all instead of {had}",
    out_of_time="Its parts ran out of time after {had} in all: ask for half as much again, "
    "which adds parts to the chain.",
    took="Its parts ran {took} in all of the {had} they asked for: {ask} in all leaves a "
    "quarter more than they took, in fewer parts.",
)
# The sweep's own field: each run's duration, from its longest run against what each was given.
_EACH_RUN = _Said(
    change="{ask} per run instead of {had}",
    out_of_time="A run ran out of time after {took}, with {had} asked for each run: ask for "
    "half as much again per run, or save checkpoints and let each run resume in a chain of "
    "shorter jobs.",
    took="The longest of its {runs} completed runs took {took} of the {had} each run was "
    "given: {ask} leaves a quarter more than it took, and shorter jobs are more likely to start "
    "sooner.",
)
# Runs in turn in one job: the job's limit, made from each run's duration, was what ran out.
_GROUPED_RUNS = _Said(
    change=_EACH_RUN.change,
    out_of_time="Its job ran out of time before its runs were done, with {had} asked for each "
    "run: ask for half as much again per run, which makes each job's limit longer.",
    took=_EACH_RUN.took,
)


def _time(facts: JobFacts) -> Suggestion | None:
    if (runs := facts.each_run) is not None:
        if not (runs.ended or runs.timed_out):
            return None
        took, had, timed_out = runs.longest_seconds, runs.given_seconds, runs.timed_out
        return _sized(
            took, had, timed_out, _GROUPED_RUNS if runs.grouped else _EACH_RUN, runs.ended
        )
    if not facts.elapsed_seconds or (facts.ended_early and not facts.timed_out):
        return None
    took, had = facts.elapsed_seconds, facts.time_limit_seconds
    if facts.task_time_limit_seconds and not facts.chain:
        # An array's tasks each had their own limit: the next one is sized on its longest task.
        took = facts.longest_task_seconds if facts.longest_task_seconds is not None else took
        had = facts.task_time_limit_seconds
    ran_out = facts.timed_out or (had is not None and took >= had)
    return _sized(took, had, ran_out, _CHAIN if facts.chain else _ONE_JOB)


def _sized(took: int, had: int | None, timed_out: bool, said: _Said, runs=1) -> Suggestion | None:
    """Half as much again after running out of time, else a quarter more than it took when that
    is well under what it had."""
    if not had:
        return None
    if timed_out:
        minutes = suggested_minutes(max(had, took), TIMEOUT_FACTOR)
        reason, source = said.out_of_time, sources.LONG_RUNNING
    else:
        minutes = suggested_minutes(took)
        if minutes * 60 > had * 0.8:
            return None  # close enough: not worth a change
        reason, source = said.took, sources.CHECKPOINT_CHAIN
    words = {"ask": format_time(minutes * 60), "had": format_time(had), "took": format_time(took)}
    return Suggestion(
        "hours",
        f"{minutes / 60:g}",
        said.change.format(**words),
        reason.format(runs=runs, **words),
        source,
    )


def clock(seconds: float | None) -> str:
    return "" if seconds is None else format_time(seconds)


def apply_suggestions(fields: dict, suggestions: Sequence[Suggestion]) -> dict:
    """The composer's values with the suggestions in place."""
    return {**fields, **{s.field: s.value for s in suggestions}}


def _product(a: float | None, b: float | None) -> float | None:
    return a * b if a and b else None


def _percent(part: float | None, whole: float | None) -> float | None:
    return 100 * part / whole if part is not None and whole else None
