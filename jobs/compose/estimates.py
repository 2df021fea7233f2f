"""Slurm's start estimate for several scripts at once: one `sbatch --test-only` each, in
threads, within a time budget. An answer later than the budget is said so rather than waited
for, so no login that does not answer holds the page. "Could it start sooner?" asks it for the
variants of one job, "Where should this run?" for one job on each of the user's logins."""

import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings

from jobs.cluster import remote
from jobs.cluster.errors import ClusterError
from jobs.models import ClusterAccount
from jobs.slurm.sbatch import WouldStart
from jobs.slurm.values import SlurmParseError

# What asks Slurm: remote.test_only, or in tests and benches an answer made to take its time.
Ask = Callable[[ClusterAccount, str], WouldStart]
# Questions in flight at once: a user's logins, or a waiting job's variants, are fewer.
MAX_AT_ONCE = 16


@dataclass(frozen=True)
class Estimate:
    start: datetime | None = None  # aware (UTC)
    problem: str = ""  # why Slurm gave no estimate
    in_time: bool = True  # False: no answer within the budget

    @property
    def answered(self) -> bool:
        return self.start is not None


def estimates(
    asked: Iterable[tuple[ClusterAccount, str]],
    budget: float | None = None,
    ask: Ask = remote.test_only,
) -> list[Estimate]:
    """One estimate per (login, script), in order. Each is asked as soon as `asked` yields it, so
    a caller that plans the next script meanwhile (a generator) overlaps its planning with the
    answers; the budget counts from the first question."""
    budget = settings.SOONER_BUDGET_SECONDS if budget is None else budget
    pool = ThreadPoolExecutor(max_workers=MAX_AT_ONCE)
    began = time.monotonic()
    futures = [pool.submit(ask, account, script) for account, script in asked]
    wait(futures, timeout=max(0.0, budget - (time.monotonic() - began)))
    # The threads still waiting finish on their own (the gateway's timeouts end them).
    pool.shutdown(wait=False, cancel_futures=True)
    return [_estimate(future, budget) for future in futures]


def _estimate(future: Future, budget: float) -> Estimate:
    if not future.done():
        return Estimate(problem=f"Slurm did not answer within {budget:g} s.", in_time=False)
    try:
        would: WouldStart = future.result()
    except remote.SlurmRefused as refused:
        return Estimate(problem=f"Slurm would not take it: {refused.message}")
    except (ClusterError, SlurmParseError) as error:
        return Estimate(problem=getattr(error, "message", str(error)))
    return Estimate(start=would.start.replace(tzinfo=UTC) if would.start else None)
