"""The sampler with NVIDIA's own pynvml on a machine with an NVIDIA GPU: the energy counter and
the other figures as the real driver gives them. Skipped where there is no GPU (CI has none)."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SAMPLER = (
    Path(__file__).resolve().parent.parent / "jobs" / "gpu" / "sampler" / "portal_gpu_sampler.py"
)


def _gpu_energy_counter() -> bool | None:
    """None without an NVIDIA GPU here; else whether GPU 0 has NVML's energy counter."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        if pynvml.nvmlDeviceGetCount() == 0:
            return None
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        try:
            pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        except pynvml.NVMLError_NotSupported:
            return False
        return True
    finally:
        pynvml.nvmlShutdown()


COUNTER = _gpu_energy_counter()
pytestmark = pytest.mark.skipif(COUNTER is None, reason="no NVIDIA GPU (NVML) on this machine")


def test_the_real_driver_gives_energy_per_interval_and_in_all(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "SLURMD_NODENAME": "gpu-node", "CUDA_VISIBLE_DEVICES": "0"}
    argv = [sys.executable, str(SAMPLER), "--dir", str(tmp_path), "--label", "1"]
    process = subprocess.Popen([*argv, "--interval", "0.5"], env=env, stderr=subprocess.PIPE)
    time.sleep(3)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=10) == 0, process.stderr.read()
    records = [
        json.loads(line) for line in (tmp_path / "gpu-1.gpu-node.jsonl").read_text().splitlines()
    ]
    [gpu] = [r for r in records if r["type"] == "gpu"]
    assert gpu["source"] == "nvml" and gpu["uuid"].startswith(("GPU-", "MIG-"))
    samples = [r for r in records if r["type"] == "sample"]
    [summary] = [r for r in records if r["type"] == "summary"]
    assert len(samples) >= 3
    if not COUNTER or gpu["mig"]:
        assert all(r["energy_j"] is None for r in samples) and summary["energy_j"] is None
        return
    energies = [r["energy_j"] for r in samples]
    assert all(e is not None and e >= 0 for e in energies)
    assert 0 < sum(energies) <= summary["energy_j"]
    # Watts from the counter: an idle card draws tens of watts, none more than 2 kW.
    seconds = summary["time"] - gpu["time"]
    assert 1 < summary["energy_j"] / seconds < 2000
    print(f"{gpu['name']}: {summary['energy_j']:.1f} J in {seconds:.1f} s, samples {energies}")
