"""One polling cycle for 10, 100 and 1,000 active jobs of one login on the local cluster: wall
time and SSH commands run, with what each cycle reads besides the login's two commands (the
cluster-wide read of GPUs and pending queue) and without it; the median of RUNS cycles each.
Jobs are real Slurm jobs, held so they stay pending.
Usage: .venv/bin/python bench/poll.py [SIZE ...]   (default 10 100 1000, each larger than the last)
"""

import contextlib
import statistics
import sys
import time
from datetime import timedelta

from cluster_setup import CountingCommands, portal_with_local_cluster

SIZES = tuple(int(size) for size in sys.argv[1:]) or (10, 100, 1000)
RUNS = 5


@contextlib.contextmanager
def without_additions(tasks):
    """The cycle as it was before it also read the whole cluster and the login's history."""
    from jobs.cluster import history

    start_reads, history_window = tasks._start_cluster_reads, history.window
    tasks._start_cluster_reads = lambda holder, background: []
    history.window = lambda account, now: None
    try:
        yield
    finally:
        tasks._start_cluster_reads, history.window = start_reads, history_window


def one_cycle(tasks, gateway, counting) -> tuple[float, int]:
    from django.conf import settings
    from django.utils import timezone

    from jobs.models import ClusterAccount, ClusterLoad

    # Due, as at the start of each beat period: the cluster's read and the login's history.
    ClusterLoad.objects.update(read_at=None)
    last_read = timezone.now() - timedelta(seconds=settings.HISTORY_READ_SECONDS + 1)
    ClusterAccount.objects.update(history_read_until=last_read)
    with counting(gateway) as counter:
        start = time.perf_counter()
        tasks.poll_clusters.apply()
        return (time.perf_counter() - start) * 1000, counter.count


def median_cycle(tasks, gateway, counting) -> tuple[float, int]:
    cycles = [one_cycle(tasks, gateway, counting) for _ in range(RUNS)]
    return statistics.median(ms for ms, _ in cycles), cycles[-1][1]


def main() -> None:
    account = portal_with_local_cluster()
    from django.utils import timezone

    from jobs import tasks
    from jobs.cluster import remote
    from jobs.cluster.gateway import gateway
    from jobs.models import Job, JobState

    login = remote.login_for(account)
    submit_many = (
        'for i in $(seq "$1"); do sbatch --hold --parsable --job-name=bench --wrap true; done'
    )
    made = 0
    for size in SIZES:
        result = gateway.run(
            login, ["bash", "-c", submit_many, "bench", str(size - made)], timeout=600
        )
        for slurm_id in result.stdout.split():
            Job.objects.create(
                owner=account.owner,
                account=account,
                name="bench",
                script="#!/bin/bash\ntrue\n",
                slurm_id=slurm_id.split(";")[0],
                state=JobState.PENDING,
                submitted=timezone.now(),
            )
        made = size
        tasks.poll_clusters.apply()  # warm: connection open, code loaded
        wall, commands = median_cycle(tasks, gateway, CountingCommands)
        with without_additions(tasks):
            bare, bare_commands = median_cycle(tasks, gateway, CountingCommands)
        start = time.perf_counter()
        ids = list(Job.objects.values_list("slurm_id", flat=True))
        snapshot = remote.poll(account, timezone.now() - timezone.timedelta(hours=1), ids)
        fetched = time.perf_counter() - start
        active = Job.objects.filter(state__in=JobState.active()).count()
        cycle = (
            f"one poll cycle {wall:7.1f} ms, {commands} SSH commands; "
            f"without the cluster and history reads {bare:7.1f} ms, {bare_commands} SSH commands; "
            f"ratio {wall / bare:.2f} "
            f"(squeue + sacct alone: {fetched * 1000:.1f} ms, {len(snapshot.queue)} rows)"
        )
        print(f"{active:5d} active jobs: {cycle}")
    gateway.run(login, ["scancel", "--user", login.username, "--name", "bench"])


if __name__ == "__main__":
    main()
