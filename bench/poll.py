"""One polling cycle for 10, 100 and 1,000 active jobs of one login on the local cluster: wall
time and SSH commands run. Jobs are real Slurm jobs, held so they stay pending.
Usage: .venv/bin/python bench/poll.py [SIZE ...]   (default 10 100 1000, each larger than the last)
"""

import sys
import time

from cluster_setup import CountingCommands, portal_with_local_cluster

SIZES = tuple(int(size) for size in sys.argv[1:]) or (10, 100, 1000)


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
        with CountingCommands(gateway) as counter:
            start = time.perf_counter()
            tasks.poll_clusters.apply()
            wall = time.perf_counter() - start
        start = time.perf_counter()
        ids = list(Job.objects.values_list("slurm_id", flat=True))
        snapshot = remote.poll(account, timezone.now() - timezone.timedelta(hours=1), ids)
        fetched = time.perf_counter() - start
        active = Job.objects.filter(state__in=JobState.active()).count()
        cycle = (
            f"one poll cycle {wall * 1000:7.1f} ms, {counter.count} SSH commands "
            f"(squeue + sacct alone: {fetched * 1000:.1f} ms, {len(snapshot.queue)} rows)"
        )
        print(f"{active:5d} active jobs: {cycle}")
    gateway.run(login, ["scancel", "--user", login.username, "--name", "bench"])


if __name__ == "__main__":
    main()
