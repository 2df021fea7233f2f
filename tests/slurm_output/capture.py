"""Captures the fixtures in this directory from the dev cluster (docker/devcluster).

    docker/devcluster/devcluster up && .venv/bin/python tests/slurm_output/capture.py

Submits a set of jobs as portaltest over ssh, with the commands jobs/slurm/ builds, and
writes what squeue, sacct, scontrol and sinfo print. Takes about two minutes (a job has to time
out).
"""

import shlex
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO))

from jobs.slurm.nodes import NODES_ARGV, PARTITIONS_ARGV  # noqa: E402
from jobs.slurm.sacct import parse_sacct, sacct_argv  # noqa: E402
from jobs.slurm.sbatch import parse_sbatch  # noqa: E402
from jobs.slurm.squeue import squeue_argv  # noqa: E402

DEVCLUSTER = REPO / "docker" / "devcluster" / "devcluster"
USER = "portaltest"
TAG = "8f0c1f7e-2b9d-4c7a-9a51-0d5e3b6c2f14"  # what the portal writes into --comment


def remote(*argv: str) -> str:
    result = subprocess.run(
        [str(DEVCLUSTER), "ssh", shlex.join(argv)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    if result.returncode != 0:
        raise SystemExit(f"{shlex.join(argv)} failed: {result.stderr}")
    return result.stdout


def sbatch(*options: str) -> int:
    return parse_sbatch(remote("sbatch", "--parsable", *options)).job_id


def save(name: str, text: str) -> None:
    (HERE / name).write_text(text)
    print(f"wrote {name}: {len(text.splitlines())} lines")


def main() -> None:
    since = datetime.now() - timedelta(seconds=5)
    save("sbatch_parsable.txt", remote("sbatch", "--parsable", "--wrap", "true"))
    save(
        "sbatch_parsable_cluster.txt",
        remote("sbatch", "--parsable", "--clusters=portallab", "--wrap", "true"),
    )
    sbatch("--job-name=ok", "--gres=gpu:a100:1", f"--comment={TAG}", "--wrap", "sleep 3")
    sbatch("--job-name=exit3", "--wrap", "exit 3")
    timeout = sbatch("--job-name=timeout", "--time=00:01:00", "--wrap", "sleep 100")
    cancel = sbatch("--job-name=cancel", "--wrap", "sleep 300")
    sbatch("--job-name=chain", "--array=1-3%1", "--wrap", "sleep 4")
    sbatch(
        "--job-name=memory",
        "--time=00:02:00",
        "--mem=1G",
        "--wrap",
        "python3 -c 'import time; x = bytearray(300 * 2**20); time.sleep(40)'",
    )
    sbatch("--job-name=rtx-full", "--partition=gpu-rtx", "--gres=gpu:rtx:2", "--wrap", "sleep 20")
    sbatch("--job-name=rtx wait", "--partition=gpu-rtx", "--gres=gpu:rtx:1", "--wrap", "sleep 1")
    held = sbatch("--job-name=held", "--hold", "--comment=tag|with|pipes", "--wrap", "true")
    after = sbatch("--job-name=after-timeout", f"--dependency=afterok:{timeout}", "--wrap", "true")
    time.sleep(3)
    remote("scancel", str(cancel))
    time.sleep(1)
    save("squeue_active.txt", remote(*squeue_argv(USER)))
    save("sacct_active.txt", remote(*sacct_argv(USER, since)))

    # The timeout job turns TIMEOUT up to ~30 s after its minute; the memory job runs 40 s.
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        jobs = {job.job_id_raw: job for job in parse_sacct(remote(*sacct_argv(USER, since)))}
        if jobs[timeout].state.is_final and all(
            job.state.is_final for raw, job in jobs.items() if raw not in (held, after)
        ):
            break
        time.sleep(5)
    save("squeue_dependency_never.txt", remote(*squeue_argv(USER)))
    remote("scancel", str(held), str(after))
    time.sleep(2)
    save("squeue_finished.txt", remote(*squeue_argv(USER)))
    save("sacct.txt", remote(*sacct_argv(USER, since)))
    save("sacct_never_eligible.txt", remote(*sacct_argv(USER, since, jobs=[held, after])))
    save("scontrol_partitions.txt", remote(*PARTITIONS_ARGV))
    save("sinfo_nodes.txt", remote(*NODES_ARGV))


if __name__ == "__main__":
    main()
