"""The same login through the ordinary login node and through the automation node (the key forced
through docker/cluster-side/portal-remote, no SFTP), on the local cluster: one poll cycle for JOBS
active jobs, one submission, and one read of FILES GPU sample files (SFTP on the login node; a
stat and a dd each through the wrapper). Medians of RUNS, and the automation node's ratio.
Usage: .venv/bin/python bench/automation_node.py [JOBS] [FILES] [RUNS]   (default 100 8 5)
"""

import statistics
import sys
import time
import uuid

from cluster_setup import CountingCommands, portal_with_local_cluster

GIVEN = [int(arg) for arg in sys.argv[1:4]]
JOBS, FILES, RUNS = GIVEN + [100, 8, 5][len(GIVEN) :]


def timed(work, gateway) -> tuple[float, int]:
    with CountingCommands(gateway) as counter:
        start = time.perf_counter()
        work()
        return (time.perf_counter() - start) * 1000, counter.count


def median(work, gateway) -> tuple[float, int]:
    runs = [timed(work, gateway) for _ in range(RUNS)]
    return statistics.median(ms for ms, _ in runs), runs[-1][1]


def main() -> None:
    account = portal_with_local_cluster()
    from django.utils import timezone

    from jobs import tasks
    from jobs.cluster import remote
    from jobs.cluster.gateway import gateway
    from jobs.models import Job, JobState

    login = remote.login_for(account)
    held = 'for i in $(seq "$1"); do sbatch --hold --parsable -J "$2" --wrap true; done'
    made = gateway.run(login, ["bash", "-c", held, "-", str(JOBS), "bench-auto"], timeout=600)
    for slurm_id in made.stdout.split():
        Job.objects.create(
            owner=account.owner, account=account, name="bench", script="#!/bin/bash\ntrue\n",
            slurm_id=slurm_id.split(";")[0], state=JobState.PENDING, submitted=timezone.now(),
        )  # fmt: skip
    folder = f"portal-jobs/bench-{uuid.uuid4().hex[:8]}"
    gateway.mkdirs(login, folder)
    samples = b"".join(b'{"type": "sample", "utilization": 50}\n' for _ in range(200))
    files = [f"{folder}/gpu-{i}.jsonl" for i in range(FILES)]
    for path in files:
        gateway.write_file(login, path, samples)

    def submit() -> None:
        job = Job.objects.create(
            owner=account.owner, account=account, name="bench-submit",
            script="#!/bin/bash\n#SBATCH --hold\ntrue\n",
        )  # fmt: skip
        remote.submit(job, "#!/bin/bash\n#SBATCH --hold\ntrue\n", look_first=False)

    figures = {}
    for route in ("login node", "automation node"):
        account.through_automation_node = route == "automation node"
        account.save(update_fields=["through_automation_node"])
        routed = remote.login_for(account)
        tasks.poll_clusters.apply()  # warm: the connection open, the code loaded
        figures[route] = {
            "poll cycle": median(tasks.poll_clusters.apply, gateway),
            "submission": median(submit, gateway),
            f"read of {FILES} sample files": median(
                lambda routed=routed: gateway.read_many(routed, [(p, 0) for p in files], 1 << 20),
                gateway,
            ),
        }
    for what in figures["login node"]:
        (plain, plain_commands), (forced, forced_commands) = (
            figures["login node"][what],
            figures["automation node"][what],
        )
        print(
            f"{what:28s} login node {plain:7.1f} ms, {plain_commands:3d} commands; "
            f"automation node {forced:7.1f} ms, {forced_commands:3d} commands; "
            f"ratio {forced / plain:.2f}"
        )
    for name in ("bench-auto", "bench-submit"):
        gateway.run(login, ["scancel", "--user", login.username, "--name", name])
    gateway.run(login, ["rm", "-rf", folder, "portal-jobs/bench-submit"])


if __name__ == "__main__":
    main()
