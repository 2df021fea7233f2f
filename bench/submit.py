"""A portal submission (the Celery task's work, in-process) against a bare paramiko `sbatch` on
an open connection, on the local cluster: medians over N runs, and their ratio. Twice: a job
without GPUs, and a GPU job, which the portal sends with its GPU sampler (about 20 kB) filled in
while the baseline sends the script as composed.
Usage: .venv/bin/python bench/submit.py [N]
"""

import statistics
import sys
import time

from cluster_setup import portal_with_local_cluster

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 30
SCRIPT = "#!/bin/bash\n#SBATCH --hold\n#SBATCH --output=portal-jobs/bench/slurm-%j.out\ntrue\n"


def _bare_client(login):
    """The baseline: plain paramiko on an open connection, TCP_NODELAY set, host key pinned."""
    import io
    import socket

    import paramiko

    sock = socket.create_connection((login.host, login.port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    client = paramiko.SSHClient()
    key_type, key_data = login.host_key.split()[:2]
    host = f"[{login.host}]:{login.port}"
    client.get_host_keys().add(
        host,
        key_type,
        paramiko.PKey.from_type_string(key_type, __import__("base64").b64decode(key_data)),
    )
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    pkey = paramiko.Ed25519Key.from_private_key(io.StringIO(login.private_key))
    client.connect(
        login.host,
        login.port,
        login.username,
        pkey=pkey,
        sock=sock,
        look_for_keys=False,
        allow_agent=False,
    )
    return client


def main() -> None:
    account = portal_with_local_cluster()
    from jobs.cluster.gateway import gateway
    from jobs.cluster.remote import login_for
    from jobs.compose.script import MONITORING_START, MONITORING_STOP

    login = login_for(account)
    gateway.run(login, ["mkdir", "-p", "portal-jobs/bench"])
    client = _bare_client(login)
    gpu_script = SCRIPT.replace(
        "true\n", f"#SBATCH --gres=gpu:a100:1\n{MONITORING_START}\n{MONITORING_STOP}\ntrue\n"
    )
    for label, script in (("no GPUs", SCRIPT), ("a GPU job", gpu_script)):
        bare, portal = _measure(account, client, script)
        b, p = statistics.median(bare) * 1000, statistics.median(portal) * 1000
        print(
            f"{label}: bare paramiko sbatch: median {b:.1f} ms; portal submission: median "
            f"{p:.1f} ms; ratio {p / b:.2f} (n={RUNS})"
        )
    gateway.run(login, ["scancel", "--user", login.username, "--state", "PENDING"])


def _measure(account, client, script: str) -> tuple[list[float], list[float]]:
    from jobs.cluster import tasks
    from jobs.models import Job

    bare, portal = [], []
    for _ in range(RUNS):
        start = time.perf_counter()
        stdin, stdout, _ = client.exec_command("sbatch --parsable")
        stdin.write(script)
        stdin.channel.shutdown_write()
        assert stdout.read().strip() and stdout.channel.recv_exit_status() == 0
        bare.append(time.perf_counter() - start)

        job = Job.objects.create(owner=account.owner, account=account, name="bench", script=script)
        start = time.perf_counter()
        tasks.submit_job.apply(args=[job.pk])
        portal.append(time.perf_counter() - start)
        job.refresh_from_db()
        assert job.slurm_id, job.message
    return bare, portal


if __name__ == "__main__":
    main()
