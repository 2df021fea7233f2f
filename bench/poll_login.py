"""One login's warm poll against its two Slurm commands run bare, on the local cluster.

The poll is what a worker runs for one login (jobs.polling.poll_login, its history read not
due); "bare" is the same squeue and sacct run on this machine as the login's Unix user, without
SSH or the portal, and "over SSH" the two through the portal's open connection and nothing else.
Medians of RUNS each, with the parts of the poll: its two commands, saving the states, the
stopped scripts' reasons and the GPU samples' read.
Usage: .venv/bin/python bench/poll_login.py [JOBS]   (default 10 held jobs)
"""

import os
import statistics
import subprocess
import sys
import time
from datetime import timedelta

from cluster_setup import portal_with_local_cluster

JOBS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
RUNS = 21


def medians_ms(works: dict) -> dict[str, tuple[float, float, float]]:
    """Each work's median wall time, and its mean CPU time on the whole machine and in this
    process, the works taken in turn in every round: slurmdbd answers sacct in about 100 ms or
    about 190 ms for minutes at a time, and each work must see the same."""
    times: dict[str, list[float]] = {what: [] for what in works}
    cpu = {what: [0.0, 0.0] for what in works}
    for _ in range(RUNS):
        for what, work in works.items():
            machine, own = _machine_cpu_ms(), time.process_time()
            start = time.perf_counter()
            work()
            times[what].append((time.perf_counter() - start) * 1000)
            cpu[what][0] += _machine_cpu_ms() - machine
            cpu[what][1] += (time.process_time() - own) * 1000
    return {
        what: (statistics.median(spent), cpu[what][0] / RUNS, cpu[what][1] / RUNS)
        for what, spent in times.items()
    }


def _machine_cpu_ms() -> float:
    """CPU time spent on this machine so far, all processes and the kernel, idle and I/O wait
    left out."""
    with open("/proc/stat") as stat:
        fields = [int(value) for value in stat.readline().split()[1:]]
    busy = sum(fields[:8]) - fields[3] - fields[4]  # user..steal, less idle and iowait
    return busy * 1000 / os.sysconf("SC_CLK_TCK")


def main() -> None:
    account = portal_with_local_cluster()
    from django.utils import timezone

    from jobs import polling
    from jobs.cluster import remote
    from jobs.cluster.gateway import gateway
    from jobs.models import ClusterAccount, Job, JobState
    from jobs.slurm.sacct import sacct_argv
    from jobs.slurm.squeue import squeue_argv

    login = remote.login_for(account)
    submitted = gateway.run(
        login,
        ["bash", "-c", 'for i in $(seq "$1"); do sbatch --hold --parsable --job-name=bench-login '
         "--wrap true; done", "bench", str(JOBS)],
        timeout=600,
    )  # fmt: skip
    ids = [line.split(";")[0] for line in submitted.stdout.split()]
    for slurm_id in ids:
        Job.objects.create(
            owner=account.owner, account=account, name="bench-login", script="#!/bin/bash\n",
            slurm_id=slurm_id, state=JobState.PENDING, submitted=timezone.now(),
        )  # fmt: skip
    # Its history was read a moment ago: the poll is the states' alone, as in most cycles.
    ClusterAccount.objects.filter(pk=account.pk).update(history_read_until=timezone.now())
    since = timezone.now()
    window = (since - timedelta(hours=1)).replace(tzinfo=None)
    commands = [squeue_argv(login.username), sacct_argv(login.username, window, ids)]
    try:
        polling.poll_login(account, "bench")  # warm: the connection open, the code loaded
        # The daemons' config, as sshd gives it to every session on the dev cluster.
        lab = os.environ.get("DEVCLUSTER_LAB", "/var/tmp/portal-devcluster")
        as_user = ["runuser", "-u", login.username, "--"] if os.geteuid() == 0 else []
        as_user += ["env", f"SLURM_CONF={lab}/etc/slurm.conf"]

        def bare() -> None:
            for argv in commands:
                subprocess.run([*as_user, *argv], check=True, capture_output=True)

        def over_ssh() -> None:
            for argv in commands:
                gateway.run(login, argv)

        figures = medians_ms(
            {
                "bare squeue + sacct": bare,
                "the two over SSH": over_ssh,
                "the two as the poll sends them": lambda: remote.poll(account, since, ids),
                "one login's warm poll": lambda: polling.poll_login(account, "bench"),
                "one login's cold poll": lambda: (
                    gateway.close_all(),
                    polling.poll_login(account, "bench"),
                ),
            }
        )
    finally:
        gateway.run(login, ["scancel", "--user", login.username, "--name", "bench-login"])
    bare_ms = figures["bare squeue + sacct"][0]
    print(f"{JOBS} held jobs of one login, medians of {RUNS} (CPU: means, machine / this process):")
    for what, (ms, machine, own) in figures.items():
        print(f"  {what:31s} {ms:7.1f} ms  ({ms / bare_ms:.2f}x bare)"
              f"  CPU {machine:6.1f} / {own:5.1f} ms")  # fmt: skip
    own = figures["one login's warm poll"][0] - figures["the two as the poll sends them"][0]
    print(f"  the portal's own part of a poll {own:7.1f} ms")


if __name__ == "__main__":
    main()
