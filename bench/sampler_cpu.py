"""CPU time the GPU sampler costs a job, per GPU and hour, with the fake NVML.

Runs jobs/gpu/sampler/portal_gpu_sampler.py for SECONDS at INTERVAL with GPUS fake GPUs, stops it
with SIGTERM, and reads the CPU time it used (user + system, from getrusage of the waited child;
Python's start-up included). The fake NVML answers at no cost, so this is the sampler's own
overhead: on a real node each NVML call adds driver time (a few tens of microseconds to a
millisecond).

Usage: .venv/bin/python bench/sampler_cpu.py [SECONDS] [INTERVAL] [GPUS]   (default 60 1 4)
"""

import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLER = ROOT / "jobs" / "gpu" / "sampler" / "portal_gpu_sampler.py"
SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 60
INTERVAL = float(sys.argv[2]) if len(sys.argv) > 2 else 1
GPUS = int(sys.argv[3]) if len(sys.argv) > 3 else 4


def cpu_seconds(seconds: float, interval: float) -> tuple[float, int]:
    """The sampler's CPU seconds for a run of `seconds`, and the sample lines it wrote."""
    with tempfile.TemporaryDirectory() as directory:
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT / "tests" / "fake_nvml"),
            "PORTAL_SAMPLER_NVML": "pynvml",
            "FAKE_NVML_UTILIZATION": ",".join(["50"] * GPUS),
            "SLURMD_NODENAME": "bench",
        }
        argv = [sys.executable, str(SAMPLER), "--dir", directory, "--label", "1"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        process = subprocess.Popen([*argv, "--interval", str(interval)], env=env)
        time.sleep(seconds)
        process.send_signal(signal.SIGTERM)
        process.wait()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        lines = (Path(directory) / "gpu-1.bench.jsonl").read_text().count('"type": "sample"')
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return used, lines


def main() -> None:
    idle, _ = cpu_seconds(0.5, 3600)  # start-up and shut-down only: no sample taken
    used, samples = cpu_seconds(SECONDS, INTERVAL)
    rounds = samples / GPUS
    per_round = (used - idle) / rounds if rounds else 0.0
    print(f"sampler, {GPUS} fake GPUs, {SECONDS:.0f} s at {INTERVAL:g} s: {samples} sample lines")
    print(f"  CPU {used:.3f} s in all; start-up and stop alone {idle:.3f} s")
    print(f"  {per_round * 1000:.3f} ms of CPU per round of {GPUS} GPUs")
    for interval in (INTERVAL, 10.0):
        per_gpu_hour = per_round * (3600 / interval) / GPUS
        print(f"  at {interval:g} s: {per_gpu_hour:.2f} CPU s per GPU per hour (steady state)")
    print(
        "  The fake NVML answers at no cost: on real GPUs add the driver's time for 4-5 NVML calls"
        " per GPU and round."
    )


if __name__ == "__main__":
    main()
