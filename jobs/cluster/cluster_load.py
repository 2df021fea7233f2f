"""The cluster-wide read of each poll cycle: every node's GPUs (the free-GPU view) and the whole
pending queue (how many jobs come before each of ours). One read per cluster per cycle, through
one of its users' logins, whatever the number of users, jobs and workers."""

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from guidance.models import Cluster
from jobs.cluster import remote
from jobs.cluster.errors import ClusterError
from jobs.models import ClusterAccount, ClusterLoad, Job, JobState
from jobs.slurm.free_gpus import count_gpus
from jobs.slurm.pending import ahead_of, gpu_demand

logger = logging.getLogger(__name__)

# Longer than the two commands take with the controller down (squeue waits ~18 s for it).
READ_HOLD_SECONDS = 60


def clusters_to_read():
    """Clusters some user has a login on: their GPUs are worth showing, and readable."""
    return Cluster.objects.filter(clusteraccount__isnull=False).distinct()


def take(cluster: Cluster, holder: str) -> tuple[ClusterLoad, ClusterAccount] | None:
    """Holds the cluster's read for this worker when one is due, with the login to read it
    through; None when no read is due, another worker reads it, or no one has a login there."""
    load, _ = ClusterLoad.objects.get_or_create(cluster=cluster)
    if not _hold(load, holder):
        return None
    account = _reader(cluster)
    if account is None:
        _release(load)
        return None
    return load, account


def finish(load: ClusterLoad, cluster: Cluster, result) -> bool:
    """Saves what `result()` read (remote.read_load, or its future's result) and lets the
    cluster go; a cluster that did not answer keeps its last figures and says why."""
    try:
        try:
            found = result()
        except ClusterError as error:
            ClusterLoad.objects.filter(pk=load.pk).update(error=error.message)
            logger.warning("GPUs of %s not read: %s", cluster, error.message)
            return False
        _save(load, cluster, found)
        return True
    finally:
        _release(load)


def _release(load: ClusterLoad) -> None:
    ClusterLoad.objects.filter(pk=load.pk).update(reading_until=None)


def _hold(load: ClusterLoad, holder: str) -> bool:
    now = timezone.now()
    # Read at most once per cycle: beat may queue a second poll while the first still runs.
    fresh = now - timedelta(seconds=settings.POLL_SECONDS * 0.8)
    free = Q(reading_until__isnull=True) | Q(reading_until__lt=now)
    due = Q(read_at__isnull=True) | Q(read_at__lt=fresh)
    until = now + timedelta(seconds=READ_HOLD_SECONDS)
    return ClusterLoad.objects.filter(free & due, pk=load.pk).update(reading_until=until) == 1


def _reader(cluster: Cluster) -> ClusterAccount | None:
    """A login of the cluster's, one with jobs waiting first (its connection is open already)."""
    logins = ClusterAccount.objects.filter(cluster=cluster).select_related("cluster")
    waiting = logins.filter(jobs__state=JobState.PENDING).first()
    return waiting or logins.order_by("-tested_at").first()


@transaction.atomic
def _save(load: ClusterLoad, cluster: Cluster, found: remote.Load) -> None:
    counts = count_gpus(found.nodes)
    demand = _typed(gpu_demand(found.pending), counts)
    load.gpus = [
        {
            "partition": count.partition,
            "gpu_type": count.gpu_type,
            "total": count.total,
            "allocated": count.allocated,
            "unavailable": count.unavailable,
            "free": count.free,
            "pending": demand.get((count.partition, count.gpu_type), 0),
        }
        for count in counts
    ]
    load.read_at, load.error = timezone.now(), ""
    load.save(update_fields=["gpus", "read_at", "error"])
    _place_jobs(cluster, ahead_of(found.pending))


def _typed(demand: dict, counts) -> dict:
    """A request for any GPU type is counted against the partition's type when it has one."""
    types: dict[str, set[str]] = {}
    for count in counts:
        types.setdefault(count.partition, set()).add(count.gpu_type)
    typed: dict[tuple[str, str], int] = {}
    for (partition, gpu_type), gpus in demand.items():
        only = types.get(partition, set())
        if not gpu_type and len(only) == 1:
            gpu_type = next(iter(only))
        typed[(partition, gpu_type)] = typed.get((partition, gpu_type), 0) + gpus
    return typed


def _place_jobs(cluster: Cluster, ahead: dict[str, int | None]) -> None:
    waiting = Job.objects.filter(account__cluster=cluster, state=JobState.PENDING).exclude(
        slurm_id=""
    )
    changed = []
    for job in waiting.only("pk", "slurm_id", "ahead_in_queue"):
        place = ahead.get(job.slurm_id)
        if place != job.ahead_in_queue:
            job.ahead_in_queue = place
            changed.append(job)
    Job.objects.bulk_update(changed, ["ahead_in_queue"], batch_size=500)
    Job.objects.filter(account__cluster=cluster, ahead_in_queue__isnull=False).exclude(
        state=JobState.PENDING
    ).update(ahead_in_queue=None)
