"""One GPU-sample collection cycle for JOBS (default 100) running jobs of one login on the local
cluster.

Each job has one node with 2 GPUs, so one sample file, in the bench user's home; each cycle the
file gains 60 lines (30 samples of each GPU, what 5 minutes at 10 s per sample write). Timed:
collect() with new data in every file (the first read, then a later one on top of stored rows),
and with nothing new. Printed: wall time, bytes read, rows stored, SFTP requests, SSH commands.
Usage: .venv/bin/python bench/samples.py [JOBS]   (BENCH_DATABASE_URL=postgres://... for PostgreSQL)
"""

import json
import sys
import time
import uuid

from cluster_setup import CountingCommands, portal_with_local_cluster

JOBS = int(sys.argv[1]) if len(sys.argv) > 1 else 100
LINES_PER_CYCLE = 60
INTERVAL = 10


class CountingRequests:
    """Counts the SFTP requests of the login's pooled session, by wrapping its request call."""

    def __init__(self, gateway, login):
        gateway.connect(login)
        (self.connection,) = gateway._pool.values()
        self.count = 0

    def __enter__(self):
        sftp = self.connection._sftp
        self.sftp, self._request = sftp, sftp._async_request

        def request(*args, **kwargs):
            self.count += 1
            return self._request(*args, **kwargs)

        sftp._async_request = request
        return self

    def __exit__(self, *exc):
        del self.sftp._async_request


def gpu_lines(uuids: list[str], node: str, start: float) -> list[dict]:
    return [
        {"type": "gpu", "time": start, "node": node, "uuid": u, "index": i,
         "name": "NVIDIA A100-SXM4-80GB", "pci_bus_id": f"00000000:{7 + i:02X}:00.0",
         "memory_total_mb": 81920.0, "mig": False, "interval": INTERVAL, "source": "nvml"}
        for i, u in enumerate(uuids)
    ]  # fmt: skip


def sample_lines(uuids: list[str], start: float, first: int, count: int) -> list[dict]:
    rows = []
    for n in range(first, first + count // len(uuids)):
        for i, u in enumerate(uuids):
            rows.append(
                {"type": "sample", "time": round(start + INTERVAL * (n + 1) + 0.013 * i, 3),
                 "uuid": u, "utilization": float((n * 7 + i * 13) % 101),
                 "memory_used_mb": 31744.0 + n % 50, "memory_total_mb": 81920.0,
                 "power_w": round(180.0 + n % 120 + 0.37, 2), "temperature_c": 55.0 + n % 20}
            )  # fmt: skip
    return rows


def encoded(rows: list[dict]) -> bytes:
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


def main() -> None:
    account = portal_with_local_cluster()
    from django.db import connection
    from django.utils import timezone

    from jobs.cluster import remote
    from jobs.cluster.gateway import gateway
    from jobs.gpu import sample_files
    from jobs.models import GpuSample, Job, JobState

    login = remote.login_for(account)
    start = time.time() - 3600
    run = uuid.uuid4().hex[:6]
    jobs, contents = [], {}
    for n in range(JOBS):
        job = Job.objects.create(
            owner=account.owner, account=account, name=f"bench-samples-{run}-{n}",
            script="#!/bin/bash\n", slurm_id=str(900000 + n), state=JobState.RUNNING,
            nodes="a100-1", submitted=timezone.now(), started=timezone.now(),
        )  # fmt: skip
        uuids = [f"GPU-{uuid.uuid4()}" for _ in range(2)]
        gateway.mkdirs(login, job.job_dir)
        contents[job.pk] = (uuids, encoded(gpu_lines(uuids, "a100-1", start)))
        jobs.append(job)

    def grow(cycle: int) -> None:
        for job in jobs:
            uuids, data = contents[job.pk]
            new = sample_lines(uuids, start, cycle * LINES_PER_CYCLE // 2, LINES_PER_CYCLE)
            data += encoded(new)
            contents[job.pk] = (uuids, data)
            gateway.write_file(login, f"{job.job_dir}/gpu-{job.slurm_id}.a100-1.jsonl", data)

    def cycle(label: str) -> None:
        rows_before = GpuSample.objects.count()
        with CountingCommands(gateway) as commands, CountingRequests(gateway, login) as requests:
            began = time.perf_counter()
            collected = sample_files.collect(account, jobs)
            wall = time.perf_counter() - began
        rows = GpuSample.objects.count() - rows_before
        print(
            f"{label:28s} {wall * 1000:7.1f} ms, {collected.files} files, "
            f"{collected.bytes / 1024:6.1f} kB read, {rows:5d} samples stored, "
            f"{requests.count} SFTP requests, {commands.count} SSH commands"
        )

    print(f"{JOBS} running jobs, 2 GPUs each, {LINES_PER_CYCLE} new lines per file per cycle "
          f"({connection.vendor})")  # fmt: skip
    sample_files.collect(account, [])  # warm: code loaded
    gateway.connect(login)
    grow(0)
    cycle("first read (new files)")
    cycle("nothing new")
    grow(1)
    cycle("60 new lines per file")
    cycle("nothing new")
    gateway.run(login, ["bash", "-c", f"rm -rf portal-jobs/bench-samples-{run}-*"])


if __name__ == "__main__":
    main()
