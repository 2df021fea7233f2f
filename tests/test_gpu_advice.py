"""What a job's GPU use makes the portal say: pure tables, no database."""

import pytest

from guidance.engine import sources
from guidance.engine.gpu_use import GpuUse, advise, describe_seconds, gpus_needed, other_gpu_type
from tests.engine_helpers import cluster

WARMUP = 300
HOUR = 3600


def _gpu(index: int, mean: float | None, **kw) -> GpuUse:
    defaults = {
        "node": "a100-2",
        "name": "NVIDIA A100 80GB",
        "seconds": HOUR if mean is not None else 0,
        "sampled_seconds": HOUR,
        "memory_total_mb": 81920,
        "peak_memory_mb": 12288,
    }
    return GpuUse(index=index, mean=mean, **(defaults | kw))


def _advise(uses, slug="narval", ran=HOUR + WARMUP, **kw):
    return advise(uses, cluster(slug), ran_seconds=ran, warmup_seconds=WARMUP, **kw)


def _codes(notes) -> list[str]:
    return [n.code for n in notes]


def test_a_30_percent_busy_gpu_gets_the_under_target_warning_with_the_dataloader_advice():
    advice = _advise([_gpu(0, 30.0)], cpus=12)
    assert _codes(advice.warnings) == ["under_target"]
    warning = advice.warnings[0]
    assert warning.message == (
        "Your GPU is 30% busy on average; the cluster asks for more than 90%."
    )
    assert warning.source == sources.UTILIZATION_TARGET
    tips = {n.code: n for n in advice.tips}
    assert "fewer_gpus" not in tips  # one GPU is already the least
    loader = tips["dataloader"]
    assert "num_workers=12 (the 12 CPUs the job has)" in loader.message
    assert "pin_memory=True" in loader.message and "persistent_workers=True" in loader.message
    assert "largest batch_size" in loader.message
    assert "it used at most 12 of 80 GB" in loader.message
    assert loader.source == sources.DATALOADER
    assert "allow_tf32" in tips["no_brainer_tweaks"].message
    assert tips["no_brainer_tweaks"].source == sources.NO_BRAINER_TWEAKS
    assert "torch.autocast" in tips["mixed_precision"].message
    assert tips["mixed_precision"].source == sources.CAREFUL_TWEAKS
    assert advice.text == warning.message


def test_several_gpus_under_target_are_told_how_many_would_do():
    advice = _advise([_gpu(0, 30.0), _gpu(1, 30.0)], cpus=12)
    assert advice.warnings[0].message.startswith("Your 2 GPUs are 30% busy on average")
    tips = {n.code: n for n in advice.tips}
    assert tips["fewer_gpus"].message.startswith("Ask for 1 GPU instead of 2")
    assert tips["fewer_gpus"].source.document == sources.DOC_DGX
    assert "num_workers=6 in each GPU's process (12 CPUs for 2 GPUs)" in tips["dataloader"].message
    assert "DistributedDataParallel" in tips["mixed_precision"].message


def test_without_the_cpu_count_the_policy_ratio_names_the_workers():
    advice = _advise([_gpu(0, 50.0)])
    loader = next(n for n in advice.tips if n.code == "dataloader")
    assert "num_workers=12 per GPU (Narval's 12 CPUs per GPU)" in loader.message


def test_an_idle_gpu_beside_a_busy_one_is_named():
    advice = _advise([_gpu(0, 30.0), _gpu(1, 0.2)])
    idle = advice.warnings[0]
    assert idle.code == "gpu_idle"
    assert idle.message.startswith(
        "GPU 1 on a100-2 has done nothing for 60 minutes: the program uses only some"
    )
    assert idle.source == sources.SBATCH_ELEMENTS
    assert advice.warnings[1].message.startswith("Your 2 GPUs are 15% busy on average")


def test_a_lone_idle_gpu_is_told_to_check_the_program():
    advice = _advise([_gpu(0, 0.0)])
    assert _codes(advice.warnings) == ["gpu_idle"]  # no "0% busy on average" on top
    assert "has done nothing for 60 minutes: check that the program" in advice.text
    assert advice.tips == ()


def test_nothing_is_said_during_the_warm_up():
    advice = _advise([_gpu(0, 0.0), _gpu(1, 30.0)], ran=WARMUP - 1)
    assert advice.warnings == () and advice.tips == () and advice.text == ""


def test_a_busy_gpu_gets_no_warning():
    assert _advise([_gpu(0, 95.0)]).warnings == ()


def test_a_mig_slice_is_unknown_not_idle():
    advice = _advise([_gpu(0, None, mig=True, name="MIG 3g.40gb")])
    assert advice.warnings == ()
    assert _codes(advice.unknown) == ["utilization_unknown"]
    assert "MIG slice" in advice.unknown[0].message and "unknown" in advice.unknown[0].message


def test_a_gpu_without_utilization_is_unknown_too():
    advice = _advise([_gpu(0, None)])
    assert advice.warnings == ()
    assert "reports no compute utilization" in advice.unknown[0].message


def test_on_the_processing_cluster_an_under_used_a100_is_sent_to_rtx():
    advice = _advise([_gpu(0, 40.0)], slug="processing", gpu_type="a100")
    tip = next(n for n in advice.tips if n.code == "use_other_gpu_type")
    assert "near-100% GPU utilization on a100" in tip.message
    assert "use rtx nodes instead" in tip.message
    assert tip.source == sources.PROCESSING_TRAINING


@pytest.mark.parametrize(
    ("gpu_type", "peak_gb", "expected"),
    [
        ("a100", 12, "rtx"),
        ("A6000", 20, "rtx"),
        ("a100", 30, None),  # the rtx's 24 GB are too small; roentgen is kept for debugging
        ("rtx", 12, None),  # the cluster asks for no full use of an rtx
        ("", 12, None),
    ],
)
def test_the_other_gpu_type(gpu_type, peak_gb, expected):
    other = other_gpu_type(cluster("processing"), gpu_type, peak_gb)
    assert (other.name if other else None) == expected


@pytest.mark.parametrize(
    ("gpus", "mean", "target", "needed"),
    [(2, 30, 90, 1), (8, 35, 90, 4), (4, 90, 90, 4), (4, 0, 90, 1), (71, 35, 90, 28)],
)
def test_gpus_needed(gpus, mean, target, needed):
    assert gpus_needed(gpus, mean, target) == needed


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(20, "under a minute"), (60, "1 minute"), (3600, "60 minutes"), (9000, "2.5 hours")],
)
def test_durations_read_as_people_say_them(seconds, text):
    assert describe_seconds(seconds) == text
