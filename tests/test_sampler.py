"""The GPU sampler run as a real process with the fake NVML, and the bash block that starts it."""

import ast
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from guidance.engine import Placement
from jobs.compose.script import render
from jobs.compose.script_spec import ScriptSpec
from jobs.gpu.monitoring import HEREDOC_END, monitoring_block, with_monitoring
from jobs.gpu.sampler import portal_gpu_sampler as sampler
from jobs.script_markers import MONITORING_START, MONITORING_STOP
from tests.services import service_missing

ROOT = Path(__file__).resolve().parent.parent
SAMPLER = ROOT / "jobs" / "gpu" / "sampler" / "portal_gpu_sampler.py"
FAKE_NVML = ROOT / "tests" / "fake_nvml"
GPU0 = "GPU-00000000-0000-0000-0000-000000000000"
GPU1 = "GPU-00000000-0000-0000-0000-000000000001"
# Captured from an A100 node (nvidia-smi 535), the second GPU with MIG mode on.
SMI_OUTPUT = (
    "0, GPU-8f5e2c1a-7d3b-4c9e-a1f2-3b4c5d6e7f80, NVIDIA A100-SXM4-40GB, 00000000:07:00.0, "
    "40960, 17203, 87, 312.45, 61\n"
    "1, GPU-1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d, NVIDIA A100-SXM4-40GB, 00000000:0F:00.0, "
    "40960, 0, [N/A], [Not Supported], 33\n"
)


def _env(tmp_path: Path, **values: str) -> dict[str, str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(FAKE_NVML),
        "PORTAL_SAMPLER_NVML": "pynvml",
        "SLURMD_NODENAME": "gpu-node-1",
        "FAKE_NVML_UTILIZATION": "30,0",
    }
    env.update(values)
    return {k: v for k, v in env.items() if v is not None}


def _start(tmp_path: Path, env: dict[str, str], interval: float = 0.2) -> subprocess.Popen:
    argv = [sys.executable, str(SAMPLER), "--dir", str(tmp_path), "--label", "42"]
    return subprocess.Popen(
        [*argv, "--interval", str(interval)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _records(tmp_path: Path) -> list[dict]:
    text = (tmp_path / "gpu-42.gpu-node-1.jsonl").read_text()
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def _run(tmp_path: Path, env: dict[str, str], seconds: float = 0.7) -> list[dict]:
    """Runs the sampler for a few intervals, stops it with SIGTERM, returns its lines."""
    process = _start(tmp_path, env)
    time.sleep(seconds)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=5)
    assert process.returncode == 0, stderr
    assert stdout == b""
    return _records(tmp_path)


def test_it_writes_gpus_then_samples_then_summaries(tmp_path):
    records = _run(tmp_path, _env(tmp_path))
    kinds = [r["type"] for r in records]
    assert kinds[:2] == ["gpu", "gpu"] and kinds[-2:] == ["summary", "summary"]
    assert set(kinds[2:-2]) == {"sample"} and len(kinds[2:-2]) >= 4
    gpus = {r["uuid"]: r for r in records if r["type"] == "gpu"}
    assert gpus[GPU0]["node"] == "gpu-node-1" and gpus[GPU0]["index"] == 0
    assert gpus[GPU0]["source"] == "nvml" and gpus[GPU0]["mig"] is False
    assert gpus[GPU0]["memory_total_mb"] == 40960 and gpus[GPU0]["interval"] == 0.2
    assert gpus[GPU1]["pci_bus_id"] == "00000000:08:00.0"
    samples = [r for r in records if r["type"] == "sample"]
    assert {r["utilization"] for r in samples if r["uuid"] == GPU0} == {30}
    assert {r["utilization"] for r in samples if r["uuid"] == GPU1} == {0}
    assert samples[0]["memory_used_mb"] == 1024 and samples[0]["power_w"] == 150
    assert samples[0]["temperature_c"] == 41
    summaries = {r["uuid"]: r for r in records if r["type"] == "summary"}
    assert summaries[GPU0]["mean_utilization"] == 30 and summaries[GPU1]["mean_utilization"] == 0
    assert summaries[GPU0]["samples"] == len(samples) // 2
    assert summaries[GPU0]["peak_memory_used_mb"] == 1024
    assert summaries[GPU0]["stopped_by"] == "SIGTERM"
    assert set(records[0]) == {
        *("type", "time", "node", "uuid", "index", "name", "pci_bus_id"),
        *("memory_total_mb", "mig", "interval", "source"),
    }
    assert set(samples[0]) == {
        *("type", "time", "uuid", "utilization", "memory_used_mb", "memory_total_mb"),
        *("power_w", "temperature_c", "energy_j"),
    }


def test_each_sample_has_the_energy_its_gpu_used_since_the_last_and_the_summary_the_total(
    tmp_path,
):
    records = _run(tmp_path, _env(tmp_path))
    start = next(r["time"] for r in records if r["type"] == "gpu")
    summaries = {r["uuid"]: r for r in records if r["type"] == "summary"}
    for uuid, watts in ((GPU0, 150), (GPU1, 60)):  # the fake's counter grows at its power draw
        samples = [r for r in records if r["type"] == "sample" and r["uuid"] == uuid]
        times = [start] + [r["time"] for r in samples]
        for sample, before in zip(samples, times, strict=False):
            # The counter is read just before the line's time stamp: a few ms of slack.
            assert sample["energy_j"] == pytest.approx(watts * (sample["time"] - before), abs=2)
        total = summaries[uuid]["energy_j"]
        assert total == pytest.approx(watts * (summaries[uuid]["time"] - start), abs=2)
        assert sum(r["energy_j"] for r in samples) <= total


def test_a_gpu_without_an_energy_counter_has_unknown_energy_not_zero(tmp_path):
    records = _run(tmp_path, _env(tmp_path, FAKE_NVML_NO_ENERGY="1"))
    samples = [r for r in records if r["type"] == "sample"]
    assert samples and all(r["energy_j"] is None for r in samples)
    assert samples[0]["power_w"] == 150  # the rest is sampled as before
    assert all(r["energy_j"] is None for r in records if r["type"] == "summary")


def test_a_mig_slice_has_unknown_energy(tmp_path):
    records = _run(tmp_path, _env(tmp_path, CUDA_VISIBLE_DEVICES=f"MIG-{GPU1}"))
    assert all(r["energy_j"] is None for r in records if r["type"] in ("sample", "summary"))


def test_energy_is_the_counters_difference_unless_it_went_back():
    assert sampler.energy_between(5_000_000, 5_250_500) == 250.5
    assert sampler.energy_between(None, 5_000_000) is None
    assert sampler.energy_between(5_000_000, None) is None
    assert sampler.energy_between(5_000_000, 1_000) is None  # the driver was reloaded


def test_an_index_in_cuda_visible_devices_picks_that_gpu(tmp_path):
    records = _run(tmp_path, _env(tmp_path, CUDA_VISIBLE_DEVICES="1"))
    assert {r["uuid"] for r in records} == {GPU1}
    assert all(r["utilization"] == 0 for r in records if r["type"] == "sample")


def test_a_uuid_in_cuda_visible_devices_picks_that_gpu(tmp_path):
    records = _run(tmp_path, _env(tmp_path, CUDA_VISIBLE_DEVICES=GPU0))
    assert {r["uuid"] for r in records} == {GPU0}
    assert all(r["utilization"] == 30 for r in records if r["type"] == "sample")


def test_mig_utilization_is_unknown_not_zero(tmp_path):
    records = _run(tmp_path, _env(tmp_path, FAKE_NVML_MIG="1"))
    assert all(r["mig"] for r in records if r["type"] == "gpu")
    samples = [r for r in records if r["type"] == "sample"]
    assert samples and all(r["utilization"] is None for r in samples)
    assert all(r["memory_used_mb"] == 1024 for r in samples)
    assert all(r["mean_utilization"] is None for r in records if r["type"] == "summary")


def test_a_mig_uuid_is_a_mig_device(tmp_path):
    records = _run(tmp_path, _env(tmp_path, CUDA_VISIBLE_DEVICES=f"MIG-{GPU1}"))
    [gpu] = [r for r in records if r["type"] == "gpu"]
    assert gpu["uuid"] == f"MIG-{GPU1}" and gpu["mig"] is True
    assert all(r["utilization"] is None for r in records if r["type"] == "sample")


def test_without_get_samples_it_reads_utilization_rates(tmp_path):
    records = _run(tmp_path, _env(tmp_path, FAKE_NVML_NO_SAMPLES="1"))
    summaries = {r["uuid"]: r for r in records if r["type"] == "summary"}
    assert summaries[GPU0]["mean_utilization"] == 30 and summaries[GPU0]["samples"] >= 2


def test_without_nvml_or_nvidia_smi_it_writes_one_unavailable_line(tmp_path):
    env = _env(tmp_path, PORTAL_SAMPLER_NVML="no_such_nvml_module", PATH=str(tmp_path))
    process = _start(tmp_path, env)
    stdout, stderr = process.communicate(timeout=10)
    assert (process.returncode, stdout) == (0, b"")
    [record] = _records(tmp_path)
    assert record["type"] == "unavailable" and record["node"] == "gpu-node-1"
    assert "neither the pynvml module nor nvidia-smi" in record["reason"]
    assert len(stderr.decode().splitlines()) == 1


def test_a_driver_that_does_not_load_is_unavailable(tmp_path):
    env = _env(tmp_path, FAKE_NVML_INIT_FAILS="1", PATH=str(tmp_path))
    process = _start(tmp_path, env)
    assert process.wait(timeout=10) == 0
    [record] = _records(tmp_path)
    assert record["type"] == "unavailable" and "Driver Not Loaded" in record["reason"]


def _fake_smi(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\ncat <<'EOF'\n{SMI_OUTPUT}EOF\n")
    smi.chmod(0o755)
    return bin_dir


def test_without_pynvml_it_reads_nvidia_smi(tmp_path):
    bin_dir = _fake_smi(tmp_path)
    env = _env(tmp_path, PORTAL_SAMPLER_NVML="no_such_nvml_module", PATH=f"{bin_dir}:/usr/bin:/bin")
    records = _run(tmp_path, env)
    gpus = [r for r in records if r["type"] == "gpu"]
    assert [g["source"] for g in gpus] == ["nvidia-smi", "nvidia-smi"]
    assert gpus[1]["pci_bus_id"] == "00000000:0F:00.0" and gpus[1]["index"] == 1
    samples = [r for r in records if r["type"] == "sample"]
    first, second = samples[0], samples[1]
    assert (first["utilization"], first["memory_used_mb"], first["power_w"]) == (87, 17203, 312.4)
    assert (second["utilization"], second["power_w"], second["temperature_c"]) == (None, None, 33)
    assert first["energy_j"] is None  # nvidia-smi has no energy counter: unknown
    summaries = [r for r in records if r["type"] == "summary"]
    assert [s["mean_utilization"] for s in summaries] == [87, None]


def test_nvidia_smi_output_is_parsed(tmp_path):
    first, second = sampler.parse_smi(SMI_OUTPUT)
    assert first["uuid"].startswith("GPU-8f5e") and first["memory_total_mb"] == 40960
    assert first["temperature_c"] == 61 and first["name"] == "NVIDIA A100-SXM4-40GB"
    assert (second["utilization"], second["power_w"]) == (None, None)
    assert sampler.parse_smi("No devices were found\n") == []


@pytest.mark.parametrize(
    ("value", "tokens"),
    [(None, None), ("", None), (" ", None), ("0,1", ["0", "1"]), (f"{GPU0}, 1", [GPU0, "1"])],
)
def test_cuda_visible_devices_is_read(value, tokens):
    assert sampler.visible_devices(value) == tokens


def test_smi_gpus_are_chosen_by_index_or_uuid_and_unknown_names_mean_all():
    gpus = [{"index": 0, "uuid": GPU0}, {"index": 1, "uuid": GPU1}]
    assert sampler.choose(["1"], gpus) == [gpus[1]]
    assert sampler.choose([GPU0], gpus) == [gpus[0]]
    assert sampler.choose(["MIG-abc"], gpus) == gpus
    assert sampler.choose(None, gpus) == gpus


def test_get_samples_values_are_averaged_by_their_type():
    def sample(stamp, **value):
        return SimpleNamespace(timeStamp=stamp, sampleValue=SimpleNamespace(**value))

    values, newest = sampler.sample_values(1, [sample(5, uiVal=10), sample(9, uiVal=20)])
    assert (sampler.mean(values), newest) == (15, 9)
    assert sampler.sample_values(0, [sample(3, dVal=2.5)]) == ([2.5], 3)


def test_the_summary_leaves_unknown_utilization_unknown():
    tally = sampler.Tally()
    tally.add({"utilization": None, "memory_used_mb": 10.0})
    tally.add({"utilization": None, "memory_used_mb": 30.0})
    summary = tally.summary(GPU0, "SIGINT", 1.0)
    assert (summary["samples"], summary["mean_utilization"]) == (2, None)
    assert summary["peak_memory_used_mb"] == 30
    assert sampler.number(float("nan")) is None  # JSON has no NaN


def test_it_stops_within_two_seconds_of_sigterm_at_a_long_interval(tmp_path):
    process = _start(tmp_path, _env(tmp_path), interval=60)
    time.sleep(0.5)
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=5) == 0
    assert time.monotonic() - sent < 2
    assert [r["type"] for r in _records(tmp_path)] == ["gpu", "gpu", "summary", "summary"]


def test_sigint_and_sighup_stop_it_too_and_sigusr1_does_not(tmp_path):
    process = _start(tmp_path, _env(tmp_path))
    time.sleep(0.3)
    process.send_signal(signal.SIGUSR1)  # a checkpointing job's warning, not for us
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=5) == 0
    assert _records(tmp_path)[-1]["stopped_by"] == "SIGINT"
    (tmp_path / "gpu-42.gpu-node-1.jsonl").unlink()
    process = _start(tmp_path, _env(tmp_path))
    time.sleep(0.3)
    process.send_signal(signal.SIGHUP)
    assert process.wait(timeout=5) == 0
    assert _records(tmp_path)[-1]["stopped_by"] == "SIGHUP"


def test_bad_options_do_not_fail(tmp_path):
    result = subprocess.run(
        [sys.executable, str(SAMPLER), "--interval", "x"], capture_output=True, timeout=10
    )
    assert (result.returncode, result.stdout) == (0, b"")


def _python_3_8() -> str | None:
    """Compute nodes have old Pythons: a Python 3.8 here, if there is one (pyenv's shims lie)."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = [shutil.which("python3.8"), *sorted(map(str, pyenv.glob("3.8*/bin/python3.8")))]
    for candidate in filter(None, candidates):
        check = [candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 8)"]
        if subprocess.run(check, capture_output=True, check=False).returncode == 0:
            return candidate
    return None


OLD_PYTHON = _python_3_8()


def test_its_syntax_is_python_3_8s():
    # Checked everywhere; the test below runs it on a real 3.8 where there is one.
    ast.parse(SAMPLER.read_text(), feature_version=(3, 8))


def test_it_runs_on_python_3_8(tmp_path):
    if OLD_PYTHON is None:
        service_missing("No Python 3.8 here (pyenv install 3.8) to run the sampler on.")
    process = subprocess.Popen(
        [OLD_PYTHON, str(SAMPLER), "--dir", str(tmp_path), "--label", "42", "--interval", "0.2"],
        env=_env(tmp_path),
        stderr=subprocess.PIPE,
    )
    time.sleep(0.7)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=5) == 0, process.stderr.read()
    assert _records(tmp_path)[-1]["mean_utilization"] == 0


# -- the bash block ------------------------------------------------------------------------------

SPEC = ScriptSpec(
    cluster="Narval",
    job_name="train",
    account="def-someuser",
    gpu_type="a100",
    gpus_per_node=2,
    nodes=1,
    cpus_per_task=12,
    mem="124500M",
    time="0-12:00:00",
    command="python train.py",
    placement=Placement.SHARED,
    data_source="/project/data",
    results_dest="/project/results",
)


def test_a_script_without_gpus_or_markers_is_unchanged():
    text = render(SPEC)
    without_gpus = text.replace("#SBATCH --gres=gpu:a100:2\n", "")
    assert with_monitoring(without_gpus, "portal-jobs/train", 10) == without_gpus
    without_markers = text.replace(f"{MONITORING_START}\n", "")
    assert with_monitoring(without_markers, "portal-jobs/train", 10) == without_markers
    monitored = with_monitoring(text, "portal-jobs/train", 10)
    assert with_monitoring(monitored, "portal-jobs/train", 10) == monitored  # not twice


@pytest.mark.parametrize(
    "gpus", ["--gres=gpu:a100:2", "--gres=tmpfs:10G,gpu:1", "--gpus=2", "-G 1"]
)
def test_gpu_requests_are_recognized(gpus):
    text = render(SPEC).replace("#SBATCH --gres=gpu:a100:2", f"#SBATCH {gpus}")
    assert with_monitoring(text, "portal-jobs/train", 10) != text


def test_the_monitored_script_is_valid_bash_and_keeps_its_markers():
    text = with_monitoring(render(SPEC), "portal-jobs/train", 10)
    assert subprocess.run(["bash", "-n"], input=text.encode(), check=False).returncode == 0
    lines = text.splitlines()
    start, stop = lines.index(MONITORING_START), lines.index(MONITORING_STOP)
    block = "\n".join(lines[start:stop])
    assert SAMPLER.read_text().rstrip("\n") in block
    assert "srun --overlap" in block and "--interval 10" in block
    assert (
        "trap 'stop_gpu_monitoring; eval \"$gpu_monitoring_then\"; wait_gpu_monitoring' EXIT"
        in block
    )
    assert lines.index("# Run") > stop


def _run_block(
    tmp_path: Path, job_dir: str, env: dict[str, str], tail: str
) -> subprocess.CompletedProcess:
    """Runs the block outside Slurm (no srun) in a script with an exit trap, in tmp_path."""
    script = "\n".join(
        [
            "set -euo pipefail",
            "finish() { echo finish ran; }",
            "trap finish EXIT",
            MONITORING_START,
            monitoring_block(job_dir, 1),
            MONITORING_STOP,
            tail,
        ]
    )
    result = subprocess.run(
        ["/bin/bash", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    return result


def test_the_block_runs_the_sampler_and_the_old_exit_trap_still_runs(tmp_path):
    env = _env(tmp_path)  # not in a Slurm job: it starts the sampler without srun
    (tmp_path / "portal-jobs" / "train").mkdir(parents=True)
    result = _run_block(tmp_path, "portal-jobs/train", env, "sleep 1.5; exit 3")
    assert result.returncode == 3 and result.stdout == "finish ran\n", result.stderr
    records = [
        json.loads(line)
        for line in (tmp_path / "portal-jobs/train/gpu-local.gpu-node-1.jsonl")
        .read_text()
        .splitlines()
    ]
    assert [r["type"] for r in records][-2:] == ["summary", "summary"]
    assert records[-1]["stopped_by"] == "SIGINT"


def test_without_python3_the_block_writes_why(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("mkdir", "cat", "mv", "date", "hostname", "sleep"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    env = {"PATH": str(bin_dir), "SLURM_ARRAY_JOB_ID": "80", "SLURM_ARRAY_TASK_ID": "2"}
    env["SLURMD_NODENAME"] = "n1"
    result = _run_block(tmp_path, str(tmp_path / "job"), env, "true")
    assert result.returncode == 0 and result.stdout == "finish ran\n", result.stderr
    [line] = (tmp_path / "job" / "gpu-80_2.n1.jsonl").read_text().splitlines()
    record = json.loads(line)
    assert record["type"] == "unavailable" and "No python3" in record["reason"]


def test_a_hostile_job_dir_stays_data(tmp_path):
    hostile = "portal-jobs/x'; touch pwned; echo '$(touch pwned2)`touch pwned3`"
    block = monitoring_block(hostile, 10)
    # Run only the assignment and read back what bash made of it.
    assignment = next(line for line in block.splitlines() if line.startswith("gpu_monitoring_dir="))
    result = subprocess.run(
        ["bash", "-c", f'{assignment}\nprintf %s "$gpu_monitoring_dir"'],
        cwd=tmp_path,
        env={"SLURM_SUBMIT_DIR": "/home/me", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout == f"/home/me/{hostile}"
    assert list(tmp_path.iterdir()) == []
    text = with_monitoring(render(SPEC), hostile, 10)
    assert subprocess.run(["bash", "-n"], input=text.encode(), check=False).returncode == 0


def test_the_sampler_source_cannot_end_the_heredoc():
    assert HEREDOC_END not in SAMPLER.read_text()
