"""The GPU-hours a composition requests, before it is submitted: one job, a chain, a sweep."""

from guidance.engine.gpu_hours import GpuHours
from guidance.engine.sweep import Grouping, from_grid
from tests.engine_helpers import advise


def test_one_job_asks_for_its_gpus_times_its_time_limit():
    rec = advise("narval", gpu_count=2, multi_gpu=True, hours=4)
    hours = rec.gpu_hours
    assert (hours.gpus, hours.hours, hours.total) == (2, 4, 8)
    assert hours.words == "8 GPU-hours (2 GPUs x 4 h)"


def test_a_chain_asks_for_each_part_and_in_all():
    rec = advise("beluga", hours=72, checkpointing=True)
    assert rec.chain.jobs == 3
    hours = rec.gpu_hours
    assert (hours.per_job, hours.parts, hours.total) == (24, 3, 72)
    assert hours.words == "24 GPU-hours (1 GPU x 24 h); a chain of 3 parts: 72 GPU-hours in all"


def test_a_sweep_of_long_runs_asks_per_run_and_in_all():
    sweep = from_grid({"lr": ["0.1", "0.01", "0.001"], "seed": ["1", "2"]}, "python train.py")
    rec = advise("narval", gpu_count=2, multi_gpu=True, hours=3, sweep=sweep)
    assert rec.sweep.grouping == Grouping.ARRAY
    hours = rec.gpu_hours
    assert (hours.runs, hours.per_run, hours.total) == (6, 6, 36)
    assert hours.total == rec.sweep.gpu_hours  # the sweep's own figure, in one place
    assert hours.words == (
        "6 GPU-hours (2 GPUs x 3 h); 6 runs: 6 GPU-hours a run, 36 GPU-hours in all"
    )


def test_a_grouped_sweep_asks_for_its_jobs_time_limits():
    sweep = from_grid({"seed": [str(i) for i in range(8)]}, "python train.py")
    rec = advise("narval", hours=0.25, sweep=sweep)
    assert rec.sweep.grouping == Grouping.GROUPED and rec.sweep.jobs == 1
    hours = rec.gpu_hours
    assert (hours.jobs, hours.runs, hours.total, hours.per_run) == (1, 8, 2, 0.25)
    assert hours.words == (
        "2 GPU-hours (1 GPU x 2 h) a job; 8 runs in one job: 2 GPU-hours in all, 0.25 a run"
    )


def test_a_sweep_of_chains_counts_every_part_of_every_run():
    hours = GpuHours(gpus=1, hours=24, parts=3, jobs=4, runs=4)
    assert (hours.per_run, hours.total) == (72, 288)
    assert hours.words == (
        "24 GPU-hours (1 GPU x 24 h); each run a chain of 3 parts; 4 runs: 72 GPU-hours a run, "
        "288 GPU-hours in all"
    )


def test_a_cluster_without_slurm_scripts_has_no_gpu_hours_to_request():
    rec = advise("dgx", hours=2)  # Run:ai: the advice stands, no Slurm job is written
    assert rec.ok and rec.guidance_only and rec.gpu_hours is None
