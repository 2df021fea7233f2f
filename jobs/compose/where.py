"""Where should this run? The job being composed, planned again for each of the user's logins:
whether it fits that cluster's published limits (and why not), the node type and GPU type the
engine picks there, the GPU-hours it asks for, when Slurm would start it (one `--test-only` per
login, all at once within the budget: jobs.compose.estimates) and the GPUs of that type free
now (the cluster's last read, jobs.cluster.cluster_load: no command of its own)."""

import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.db.models import Prefetch

from guidance.engine.gpu_hours import GpuHours
from guidance.facts import cluster_facts, facts_kept
from guidance.models import Cluster
from jobs.cluster import remote
from jobs.compose.estimates import Ask, Estimate, estimates
from jobs.compose.forms import ComposeForm
from jobs.compose.from_form import compose
from jobs.models import ClusterAccount, ClusterLoad


def job_fields(data) -> dict[str, str]:
    """The composer's fields alone: not its buttons, token or editor, which are no job's."""
    return {name: data[name] for name in ComposeForm.base_fields if name in data}


@dataclass(frozen=True)
class Place:
    account: ClusterAccount
    fits: bool
    why_not: tuple[str, ...] = ()  # what stops it there, in the composer's words
    partition: str = ""
    gpu_type: str = ""
    gpu_hours: GpuHours | None = None
    estimate: Estimate = field(default_factory=Estimate)
    free_gpus: int | None = None  # None: the cluster's GPUs were never read
    changes: tuple[str, ...] = ()  # what moving the composition there changes

    @property
    def cluster(self) -> Cluster:
        return self.account.cluster

    @property
    def start(self) -> datetime | None:
        return self.estimate.start

    def order(self) -> tuple:
        """Fits first, then the soonest start Slurm predicts (none known: last), then the
        fewest GPU-hours."""
        start = self.start.timestamp() if self.start else math.inf
        hours = self.gpu_hours.total if self.gpu_hours else math.inf
        return (not self.fits, self.start is None, start, hours, self.cluster.name)


def retarget(fields: dict, cluster: Cluster) -> tuple[dict, list[str]]:
    """The composition's fields moved to `cluster`, and what that changed, in words. What names
    something of the cluster it came from (a node type, a GPU type, an allocation, modules where
    the new one has none, the old one's default results folder) is left for the engine to choose
    again there."""
    moved = job_fields(fields)
    if moved.get("cluster") == cluster.slug:
        return moved, []
    moved["cluster"] = cluster.slug
    facts = cluster_facts(cluster)
    changes = []
    partition = str(moved.get("partition") or "").strip()
    if partition and partition not in {p.name for p in facts.partitions}:
        moved["partition"] = ""
        changes.append(
            f"Node type {partition} is not one of {cluster.name}'s: the advice picks one."
        )
    gpu_type = str(moved.get("gpu_type") or "").strip()
    if gpu_type and facts.gpu_type(gpu_type) is None:
        moved["gpu_type"] = ""
        changes.append(f"{cluster.name} has no {gpu_type} GPUs: the advice picks a GPU type.")
    if str(moved.get("account") or "").strip():
        changes.append(
            f"Account {moved['account']} was for the other cluster: left empty, "
            f"give {cluster.name}'s allocation if it needs one."
        )
        moved["account"] = ""
    if str(moved.get("modules") or "").strip() and not facts.environment.modules:
        changes.append(f"{cluster.name} publishes no modules: the module loads were left out.")
        moved["modules"] = ""
    results = str(moved.get("results_dir") or "").strip()
    if not results or results == str(moved.get("results_default") or "").strip():
        if results:
            changes.append(f"The results directory follows the cluster: {cluster.name}'s default.")
        moved["results_dir"] = ""
        moved["results_default"] = ""
    return moved, changes


def rank(
    user, fields: dict, budget: float | None = None, ask: Ask = remote.test_only
) -> list[Place]:
    """Each of `user`'s logins, best first. Only their own: no one else's login is planned for,
    asked of Slurm, or listed."""
    accounts = ClusterAccount.objects.filter(owner=user).prefetch_related(
        Prefetch("cluster", Cluster.objects.with_facts())
    )
    places: list[tuple[Place, str]] = []

    def planned_one_by_one() -> Iterator[tuple[ClusterAccount, str]]:
        # Each login's question goes to Slurm while the next login is planned.
        for account in accounts.order_by("cluster__name", "pk"):
            place, script = _planned(account, fields)
            places.append((place, script))
            if script:
                yield account, script

    with facts_kept():
        answers = iter(estimates(planned_one_by_one(), budget, ask))
    estimated = [next(answers) if script else place.estimate for place, script in places]
    free = _free_gpus([place.cluster for place, _ in places])
    ranked = [
        replace(place, estimate=estimate, free_gpus=_free_of(free, place))
        for (place, _), estimate in zip(places, estimated, strict=True)
    ]
    return sorted(ranked, key=Place.order)


def _planned(account: ClusterAccount, fields: dict) -> tuple[Place, str]:
    moved, changes = retarget(fields, account.cluster)
    form = ComposeForm(dict(moved))
    composed = compose(form)
    if composed is None:
        why = tuple(
            f"{form.fields[name].label}: {message}" if name in form.fields else message
            for name, messages in form.errors.items()
            for message in messages
        )
        place = Place(account, fits=False, why_not=why, changes=tuple(changes))
        return place, ""
    rec = composed.recommendation
    place = Place(
        account,
        fits=True,
        partition=rec.choice.partition.name if rec.choice else "",
        gpu_type=rec.choice.partition.gpu_type if rec.choice else "",
        gpu_hours=rec.gpu_hours,
        estimate=Estimate(problem="" if composed.script else "Not scheduled by Slurm."),
        changes=tuple(changes),
    )
    return place, composed.script


def _free_gpus(clusters: list[Cluster]) -> dict[tuple[int, str, str], int]:
    """Free GPUs per (cluster, partition, GPU type) at the cluster's last read: one query."""
    loads = ClusterLoad.objects.filter(cluster__in=clusters, read_at__isnull=False)
    return {
        (load.cluster_id, row["partition"], row["gpu_type"].casefold()): row["free"]
        for load in loads
        for row in load.gpus
    }


def _free_of(free: dict[tuple[int, str, str], int], place: Place) -> int | None:
    """The node type's GPUs of that type; where Slurm names its partitions otherwise than the
    published node types, that GPU type's across the cluster."""
    gpu_type = place.gpu_type.casefold()
    if (key := (place.cluster.pk, place.partition, gpu_type)) in free:
        return free[key]
    found = [n for (pk, _, name), n in free.items() if pk == place.cluster.pk and name == gpu_type]
    return sum(found) if found else None
