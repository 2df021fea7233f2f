"""A portal submission (the Celery task's work, in-process) against a bare paramiko `sbatch` in a
channel of an open connection, on the local cluster: medians over N runs, and their ratio. Twice: a
job without GPUs, and a GPU job, which the portal sends with its GPU sampler (about 20 kB) filled in
while the baseline sends the script as composed.
Usage: .venv/bin/python bench/submit.py [N]
"""

import statistics
import sys
import time

from cluster_setup import portal_with_local_cluster

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 30
SCRIPT = "#!/bin/bash\n#SBATCH --hold\n#SBATCH --output=portal-jobs/bench/slurm-%j.out\ntrue\n"


def _bare_transport(login):
    """The baseline's own open connection: a gateway of its own (TCP_NODELAY set, host key
    pinned), whose paramiko transport the baseline then drives by hand."""
    from jobs.cluster.gateway import Gateway

    bare = Gateway()
    bare.connect(login)
    (connection,) = bare._pool.values()
    return connection.transport


def _bare_sbatch(transport, script: str) -> bytes:
    """sbatch in a plain channel: no pool, no timeouts, no error mapping, no job folder."""
    channel = transport.open_session()
    channel.exec_command("sbatch --parsable")
    channel.sendall(script.encode())
    channel.shutdown_write()
    out = b""
    while chunk := channel.recv(4096):
        out += chunk
    assert out.strip() and channel.recv_exit_status() == 0
    return out


def main() -> None:
    account = portal_with_local_cluster()
    from jobs.cluster.gateway import gateway
    from jobs.cluster.remote import login_for
    from jobs.script_markers import MONITORING_START, MONITORING_STOP

    login = login_for(account)
    gateway.run(login, ["mkdir", "-p", "portal-jobs/bench"])
    transport = _bare_transport(login)
    gpu_script = SCRIPT.replace(
        "true\n", f"#SBATCH --gres=gpu:a100:1\n{MONITORING_START}\n{MONITORING_STOP}\ntrue\n"
    )
    submitted: list[str] = []
    for label, script in (("no GPUs", SCRIPT), ("a GPU job", gpu_script)):
        bare, portal = _measure(account, transport, script, submitted)
        b, p = statistics.median(bare) * 1000, statistics.median(portal) * 1000
        print(
            f"{label}: bare paramiko sbatch: median {b:.1f} ms; portal submission: median "
            f"{p:.1f} ms; ratio {p / b:.2f} (n={RUNS})"
        )
    # Its own jobs only: other work of the test user may be queued on the cluster.
    gateway.run(login, ["scancel", *submitted])


def _measure(
    account, transport, script: str, submitted: list[str]
) -> tuple[list[float], list[float]]:
    from jobs import tasks
    from jobs.models import Job

    bare, portal = [], []
    for _ in range(RUNS):
        start = time.perf_counter()
        out = _bare_sbatch(transport, script)
        bare.append(time.perf_counter() - start)
        submitted.append(out.decode().strip().split(";")[0])

        job = Job.objects.create(owner=account.owner, account=account, name="bench", script=script)
        start = time.perf_counter()
        tasks.submit_job.apply(args=[job.pk])
        portal.append(time.perf_counter() - start)
        job.refresh_from_db()
        assert job.slurm_id, job.message
        submitted.append(job.slurm_id)
    return bare, portal


if __name__ == "__main__":
    main()
