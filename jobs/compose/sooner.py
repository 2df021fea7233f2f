"""Could a waiting job start sooner? The same job composed again with one change (a shorter time
limit that still covers each part's work, or another node type and GPU type of the cluster),
each asked of Slurm with `sbatch --test-only`, all at once and within a time budget. The user
picks one; the new job replaces the waiting one once Slurm has accepted it (jobs.tasks)."""

import math
from dataclasses import dataclass, field, replace
from datetime import datetime

from guidance.engine.notes import describe_hours
from guidance.engine.slurm_time import format_time
from jobs.compose.estimates import estimates
from jobs.compose.forms import ComposeForm
from jobs.compose.from_form import compose
from jobs.models import Job, JobState

# A shorter limit is worth offering when it saves at least this much of the current one.
SHORTER_BY = 0.1


@dataclass(frozen=True)
class Option:
    label: str
    changes: dict[str, str] = field(
        default_factory=dict
    )  # composer fields; {} for the job as it is
    script: str = ""
    start: datetime | None = None  # Slurm's estimate, aware (UTC)
    problem: str = ""  # why Slurm gave no estimate

    @property
    def answered(self) -> bool:
        return self.start is not None


def can_start_sooner(job: Job) -> bool:
    """Only a waiting job the portal composed can be composed again with a change."""
    return job.state == JobState.PENDING and job.composition_id is not None and bool(job.slurm_id)


def options(job: Job) -> list[Option]:
    """The job as it is first, then each change the composer accepts without an error."""
    fields = dict(job.composition.fields)
    composed = compose(ComposeForm(fields))
    if composed is None or not composed.script:
        return []
    rec = composed.recommendation
    found = [Option("As it is", {}, job.script)]
    needed = rec.chain.hours_per_job if rec.chain else rec.spec.hours
    shorter = math.ceil(needed * 60)
    if shorter <= rec.resources.minutes.value * (1 - SHORTER_BY):
        label = (
            f"A time limit of {describe_hours(shorter / 60)} instead of "
            f"{describe_hours(rec.resources.minutes.value / 60)}: what "
            + ("each part of the chain" if rec.chain else "the job")
            + " needs, without the margin"
        )
        found.append(_composed(fields, {"time_limit": format_time(shorter * 60)}, label))
    current = rec.choice.partition.name
    for partition in rec.cluster.partitions:
        if partition.name == current:
            continue
        changes = {"partition": partition.name, "gpu_type": partition.gpu_type}
        label = f"On {partition.name} ({partition.gpu_type} GPUs)"
        found.append(_composed(fields, changes, label))
    return [option for option in found if option.script]


def _composed(fields: dict, changes: dict[str, str], label: str) -> Option:
    composed = compose(ComposeForm(fields | changes))
    script = composed.script if composed is not None else ""
    return Option(label, changes, script)


def estimate(job: Job, offered: list[Option], budget: float | None = None) -> list[Option]:
    """Slurm's estimate for each option, asked in parallel within `budget` seconds."""
    found = estimates([(job.account, option.script) for option in offered], budget)
    return [
        replace(option, start=answer.start, problem=answer.problem)
        for option, answer in zip(offered, found, strict=True)
    ]


def sooner_than_now(answered: list[Option]) -> list[Option]:
    """The options Slurm would start before the job as it is, soonest first."""
    now = answered[0] if answered and not answered[0].changes else None
    if now is None or now.start is None:
        return [o for o in answered if o.changes and o.start]
    return sorted((o for o in answered if o.changes and o.start and o.start < now.start),
                  key=lambda o: o.start)  # fmt: skip
