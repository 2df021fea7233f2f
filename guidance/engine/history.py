"""What the user's earlier runs of a job used, and what to ask for this time.

Runs in, a summary and a proposal out: the margins and words are the efficiency report's "next
run" (efficiency.py), applied to the longest and largest of several runs instead of one.

Decisions, so that the proposal stays honest:
- Runs that tell nothing about what the job needs are named and left out: failed, cancelled or
  still running, and a run that ended much sooner than the others (under a quarter of their
  median: it most likely stopped early).
- A run that timed out or ran out of memory stays in: it needed more than it had, so it asks for
  half as much again, as the report does for one such run.
- Fewer than MIN_RUNS kept runs propose nothing: one run is the report's job, and the spread of
  one run says nothing.
- Nothing proposed exceeds what the cluster allows (the partition's time, a node's memory, its
  GPUs): where the runs need more, the proposal is the limit and its reason says so.
- CPUs are shown (their efficiency) but not proposed: the CPUs per GPU are the site's share, and
  idle CPUs in a GPU job are often data loaders waiting, not waste worth a change.
"""

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from guidance.engine import sources
from guidance.engine.efficiency import (
    MEMORY_STEP_MB,
    OUT_OF_MEMORY_FACTOR,
    TIME_MARGIN,
    TIMEOUT_FACTOR,
    Suggestion,
    suggested_minutes,
)
from guidance.engine.gpu_use import FEWER_GPUS, gpus_needed
from guidance.engine.slurm_time import format_time, parse_seconds

MIN_RUNS = 2
# A run under this share of the others' median elapsed time most likely stopped early.
SHORT_SHARE = 0.25


class Outcome(StrEnum):
    COMPLETED = "completed"
    TIMED_OUT = "timed out"
    OUT_OF_MEMORY = "out of memory"
    FAILED = "failed"
    CANCELLED = "cancelled"
    RUNNING = "still running"


# What each outcome left out says; the others are kept.
_LEFT_OUT = {
    Outcome.FAILED: "it failed, so it may have stopped before doing the work",
    Outcome.CANCELLED: "it was cancelled before it finished",
    Outcome.RUNNING: "it has not finished yet",
}


@dataclass(frozen=True)
class PastRun:
    """One earlier run, as Slurm's accounting and the portal's GPU samples tell it."""

    label: str  # how the user knows it: "job 1234"
    outcome: Outcome
    elapsed_seconds: int | None = None
    time_limit_seconds: int | None = None
    max_rss_mb: float | None = None
    requested_memory_mb: float | None = None
    cpu_seconds: float | None = None
    cpus: int | None = None
    gpus: int | None = None
    gpu_busy_percent: float | None = None  # the GPUs' mean use over the run
    gpu_memory_peak_mb: float | None = None  # the fullest card's peak
    # False where its time is not one run of the work, so no time is proposed from it: a chain's
    # part runs until the checkpoint warning, a grouped sweep's job runs several runs in turn.
    sizes_time: bool = True


@dataclass(frozen=True)
class Limits:
    """The most this job may ask for where it would run: None where it is not known."""

    max_minutes: int
    # The job is a sweep: the time proposed is each run's duration (the composer's `hours`),
    # from which the sweep's plan makes each job's time limit.
    per_run: bool = False
    memory_mb: int | None = None
    gpus: int | None = None
    target_percent: float = 90  # the cluster's GPU use target (its policy)


@dataclass(frozen=True)
class Spread:
    low: float
    high: float

    @classmethod
    def of(cls, values: Sequence[float | None]) -> "Spread | None":
        known = [v for v in values if v is not None]
        return cls(min(known), max(known)) if known else None


@dataclass(frozen=True)
class LeftOut:
    label: str
    why: str


@dataclass(frozen=True)
class History:
    kept: tuple[PastRun, ...]
    left_out: tuple[LeftOut, ...]
    elapsed: Spread | None  # seconds
    time_limit: Spread | None  # seconds, what the runs asked for
    max_rss: Spread | None  # MB
    requested_memory: Spread | None  # MB
    cpu_percent: Spread | None
    gpu_busy: Spread | None  # percent
    gpu_memory_peak_mb: float | None
    gpus: int | None  # the most the runs asked for
    proposal: tuple[Suggestion, ...]
    headline: str  # the figures and the proposal in one line

    @property
    def too_few(self) -> bool:
        return len(self.kept) < MIN_RUNS

    def figures(self) -> tuple[tuple[str, str], ...]:
        """What the kept runs used, each with its spread, as the page and the API list them."""
        rows = []
        if self.elapsed:
            asked = f", of {words(self.time_limit.high)} asked" if self.time_limit else ""
            rows.append(("Elapsed", _spread(self.elapsed, words) + asked))
        if self.max_rss:
            asked = f", of {gb(self.requested_memory.high)} asked" if self.requested_memory else ""
            rows.append(("Peak memory (MaxRSS)", _spread(self.max_rss, gb) + asked))
        if self.cpu_percent:
            rows.append(("CPU efficiency", _spread(self.cpu_percent, _percent)))
        if self.gpu_busy:
            rows.append(("GPUs busy", _spread(self.gpu_busy, _percent) + " on average"))
        if self.gpu_memory_peak_mb is not None:
            rows.append(("GPU memory peak", gb(self.gpu_memory_peak_mb)))
        return tuple(rows)


def summarize(runs: Sequence[PastRun], limits: Limits) -> History:
    """The runs' figures and, from MIN_RUNS kept runs on, the values to ask for."""
    kept, left_out = _sort_out(runs)
    history = History(
        kept=kept,
        left_out=left_out,
        elapsed=Spread.of([r.elapsed_seconds for r in kept]),
        time_limit=Spread.of([r.time_limit_seconds for r in kept]),
        max_rss=Spread.of([r.max_rss_mb for r in kept]),
        requested_memory=Spread.of([r.requested_memory_mb for r in kept]),
        cpu_percent=Spread.of([_cpu_percent(r) for r in kept]),
        gpu_busy=Spread.of([r.gpu_busy_percent for r in kept]),
        gpu_memory_peak_mb=max(
            (r.gpu_memory_peak_mb for r in kept if r.gpu_memory_peak_mb is not None), default=None
        ),
        gpus=max((r.gpus for r in kept if r.gpus), default=None),
        proposal=(),
        headline="",
    )
    proposal = () if history.too_few else _propose(kept, history, limits)
    return _with_headline(history, proposal, limits)


def _sort_out(runs: Sequence[PastRun]) -> tuple[tuple[PastRun, ...], tuple[LeftOut, ...]]:
    left_out = [LeftOut(r.label, _LEFT_OUT[r.outcome]) for r in runs if r.outcome in _LEFT_OUT]
    ended = [r for r in runs if r.outcome not in _LEFT_OUT and r.elapsed_seconds is not None]
    left_out += [LeftOut(r.label, "Slurm has not said how long it ran") for r in runs
                 if r.outcome not in _LEFT_OUT and r.elapsed_seconds is None]  # fmt: skip
    median = statistics.median(r.elapsed_seconds for r in ended) if ended else 0
    kept = []
    for run in ended:
        if run.outcome == Outcome.COMPLETED and run.elapsed_seconds < median * SHORT_SHARE:
            left_out.append(
                LeftOut(
                    run.label,
                    f"it ran {words(run.elapsed_seconds)}, under a quarter of the others' "
                    f"{words(median)}: it most likely stopped early",
                )
            )
        else:
            kept.append(run)
    return tuple(kept), tuple(left_out)


def _cpu_percent(run: PastRun) -> float | None:
    if run.cpu_seconds is None or not run.cpus or not run.elapsed_seconds:
        return None
    return 100 * run.cpu_seconds / (run.cpus * run.elapsed_seconds)


def _propose(kept: Sequence[PastRun], history: History, limits: Limits) -> tuple[Suggestion, ...]:
    return tuple(
        s
        for s in (
            _time(kept, history, limits),
            _memory(kept, history, limits),
            _gpus(history, limits),
        )
        if s is not None
    )


def needed_minutes(run: PastRun) -> int:
    """What this run says the job needs: a quarter more than it took, or half as much again as
    it had when it ran out of time (the report's margins)."""
    if run.outcome == Outcome.TIMED_OUT and run.time_limit_seconds:
        return suggested_minutes(max(run.time_limit_seconds, run.elapsed_seconds), TIMEOUT_FACTOR)
    return suggested_minutes(run.elapsed_seconds)


def _time(kept: Sequence[PastRun], history: History, limits: Limits) -> Suggestion | None:
    kept = [run for run in kept if run.sizes_time]
    if len(kept) < MIN_RUNS:
        return None
    longest = max(kept, key=needed_minutes)
    wanted = needed_minutes(longest)
    minutes = min(wanted, limits.max_minutes)
    ask = format_time(minutes * 60)
    if longest.outcome == Outcome.TIMED_OUT:
        why = (
            f"{longest.label} ran out of time after {words(longest.time_limit_seconds)}: "
            "half as much again"
        )
    else:
        why = (
            f"the longest of {len(kept)} runs took {words(longest.elapsed_seconds)}: "
            f"{words(minutes * 60)} leaves a quarter more than it took"
        )
    if minutes < wanted:
        why += (
            f", but {words(limits.max_minutes * 60)} is the most this partition allows: save "
            "checkpoints and resume in a chain of shorter jobs"
        )
    asked = history.time_limit
    instead = f" instead of {format_time(asked.high)}" if asked else ""
    if limits.per_run:  # the sweep's duration of each run, in the composer's hours
        field, value, change = "hours", f"{minutes / 60:g}", f"{ask} per run{instead}"
    else:
        field, value, change = "time_limit", ask, f"--time={ask}{instead}"
    return Suggestion(field, value, change, _sentence(why), sources.CHECKPOINT_CHAIN)


def _needed_memory_mb(run: PastRun) -> float | None:
    if run.outcome == Outcome.OUT_OF_MEMORY and run.requested_memory_mb:
        return run.requested_memory_mb * OUT_OF_MEMORY_FACTOR
    return run.max_rss_mb * TIME_MARGIN if run.max_rss_mb else None


def _memory(kept: Sequence[PastRun], history: History, limits: Limits) -> Suggestion | None:
    needs = [(n, r) for r in kept if (n := _needed_memory_mb(r)) is not None]
    if not needs:
        return None
    need, run = max(needs, key=lambda pair: pair[0])
    wanted = max(1, math.ceil(round(need / MEMORY_STEP_MB, 6))) * MEMORY_STEP_MB
    megabytes = min(wanted, limits.memory_mb) if limits.memory_mb else wanted
    if run.outcome == Outcome.OUT_OF_MEMORY:
        why = (
            f"{run.label} was killed for using more than the {run.requested_memory_mb:.0f} MB it "
            "asked for: half as much again"
        )
    else:
        why = (
            f"the runs used at most {history.max_rss.high:.0f} MB: {megabytes} MB leaves a "
            "quarter more than they used, and memory a job holds is kept from other jobs"
        )
    if megabytes < wanted:
        why += f", but {limits.memory_mb} MB is all a node has"
    asked = history.requested_memory
    change = f"--mem={megabytes}M" + (f" instead of {asked.high:.0f}M" if asked else "")
    return Suggestion("memory", f"{megabytes}M", change, _sentence(why), sources.SBATCH_ELEMENTS)


def _gpus(history: History, limits: Limits) -> Suggestion | None:
    busy, gpus = history.gpu_busy, history.gpus
    if busy is None or not gpus:
        return None
    # The busiest run decides: fewer GPUs must still do the work of that one.
    needed = gpus_needed(gpus, busy.high, limits.target_percent)
    if limits.gpus:
        needed = min(needed, limits.gpus)
    if needed >= gpus:
        return None
    return Suggestion(
        "gpu_count",
        str(needed),
        f"{needed} GPU{'s' if needed != 1 else ''} instead of {gpus}",
        f"Their {gpus} GPUs were at most {busy.high:.0f}% busy on average: {needed} at "
        f"{limits.target_percent:g}% do the same work, and wait less in the queue.",
        FEWER_GPUS,
    )


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:] + "."


def _with_headline(history: History, proposal: tuple[Suggestion, ...], limits: Limits) -> History:
    figures = []
    if history.elapsed:
        of = f" of {words(history.time_limit.high)}" if history.time_limit else ""
        figures.append(f"at most {words(history.elapsed.high)}{of}")
    if history.max_rss:
        of = f" of {gb(history.requested_memory.high)}" if history.requested_memory else ""
        figures.append(f"{gb(history.max_rss.high)}{of}")
    if history.gpu_busy:
        figures.append(f"GPUs {history.gpu_busy.high:.0f}% busy")
    runs = len(history.kept)
    line = f"Last {runs} run{'s' if runs != 1 else ''}: {', '.join(figures) or 'no figures yet'}"
    if proposal:
        line += ": ask " + ", ".join(_asked(s) for s in proposal)
    return History(**{**history.__dict__, "proposal": proposal, "headline": line})


def _asked(s: Suggestion) -> str:
    if s.field == "time_limit":
        return words(parse_seconds(s.value))
    if s.field == "hours":
        return f"{words(float(s.value) * 3600)} per run"
    if s.field == "memory":
        return gb(float(s.value.removesuffix("M")))
    return f"{s.value} GPU{'s' if s.value != '1' else ''}"


def _spread(spread: Spread, say) -> str:
    low, high = say(spread.low), say(spread.high)
    return high if low == high else f"{low} to {high}"


def _percent(value: float) -> str:
    return f"{value:.0f}%"


def gb(megabytes: float) -> str:
    return f"{megabytes / 1024:.0f} GB" if megabytes >= 1024 else f"{megabytes:.0f} MB"


def words(seconds: float | None) -> str:
    """A duration as people say it: '45 s', '12 min', '2 h 40', '3 days 4 h'."""
    if seconds is None:
        return "?"
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, rest = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h" + (f" {rest:02d}" if rest else "")
    days, hours = divmod(hours, 24)
    return f"{days} days" + (f" {hours} h" if hours else "")
