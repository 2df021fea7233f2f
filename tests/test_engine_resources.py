"""GPUs, CPUs, memory and time to ask for, chains of checkpointed jobs, and the tips."""

import subprocess
import sys

import pytest

from guidance.engine import Workload, sources
from tests.engine_helpers import advise, codes, note


@pytest.mark.parametrize(
    ("slug", "cpus", "mem", "cpus_source", "mem_source"),
    [
        ("beluga", 10, "47000M", sources.PUBLIC_HARDWARE, sources.SBATCH_EXAMPLE),
        ("cedar", 6, "32000M", sources.SBATCH_ELEMENTS, sources.SBATCH_EXAMPLE),
        ("graham", 16, "64000M", sources.PUBLIC_HARDWARE, sources.SBATCH_EXAMPLE),
        ("narval", 12, "124500M", sources.PUBLIC_HARDWARE, sources.PUBLIC_HARDWARE),
    ],
)
def test_cpus_and_memory_follow_the_clusters_policy_per_gpu(
    slug, cpus, mem, cpus_source, mem_source
):
    rec = advise(slug, dataset_gb=50)
    assert rec.resources.cpus_per_task.value == cpus
    assert rec.resources.mem == mem
    assert rec.resources.cpus_per_task.source == cpus_source
    assert rec.resources.memory_mb.source == mem_source


def test_one_gpu_unless_the_program_uses_several():
    rec = advise("narval", gpu_count=4, dataset_gb=50)
    assert rec.resources.gpus_per_node.value == 1
    assert note(rec.warnings, "one_gpu_unless_multi").source == sources.SBATCH_ELEMENTS
    rec = advise("narval", gpu_count=4, multi_gpu=True, dataset_gb=50)
    assert rec.resources.gpus_per_node.value == 4
    assert rec.resources.cpus_per_task.value == 48
    assert rec.resources.mem == "498000M"  # 4 x 124500M
    assert "use_ddp" in codes(rec.tips)


def test_gpus_are_spread_over_the_nodes_asked_for():
    rec = advise("narval", gpu_count=8, multi_gpu=True, nodes=2, dataset_gb=50)
    assert (rec.resources.nodes.value, rec.resources.gpus_per_node.value) == (2, 4)


@pytest.mark.parametrize(
    ("hours", "jobs", "time"),
    [
        (24, None, "1-00:00:00"),  # exactly one chunk: no chain
        (24.5, 2, "1-00:00:00"),
        (72, 3, "1-00:00:00"),
        (73, 4, "1-00:00:00"),
        (240, 10, "1-00:00:00"),  # 10 days on Beluga (max 7) as a chain: 002 says it may
    ],
)
def test_long_checkpointed_work_becomes_a_chain(hours, jobs, time):
    rec = advise("beluga", hours=hours, checkpointing=True)
    assert rec.ok, rec.errors
    if jobs is None:
        assert rec.chain is None
    else:
        assert rec.chain.jobs == jobs
        assert rec.chain.array == f"1-{jobs}%1"
        assert rec.chain.source == sources.CHECKPOINT_CHAIN
    assert rec.resources.time == time


def test_long_work_without_checkpoints_gets_a_warning():
    rec = advise("cedar", hours=48)
    assert rec.chain is None
    assert rec.resources.time == "2-00:00:00"
    assert note(rec.warnings, "long_without_checkpoints").source == sources.LONG_RUNNING
    assert "long_without_checkpoints" not in codes(advise("cedar", hours=24).warnings)


@pytest.mark.parametrize(
    ("slug", "hours", "maximum"),
    [("beluga", 168.5, "7 days"), ("narval", 200, "7 days"), ("cedar", 700, "28 days")],
)
def test_a_duration_over_the_maximum_is_an_error_naming_it(slug, hours, maximum):
    rec = advise(slug, hours=hours)
    error = note(rec.errors, "over_max_duration")
    assert f"maximum job duration of {maximum}" in error.message
    assert error.field == "hours"
    # 002 names Béluga's and Cedar's limits; only 004's copy of its list names Narval's.
    stated_in = sources.NOTES_SBATCH_ELEMENTS if slug == "narval" else sources.SBATCH_ELEMENTS
    assert error.source == stated_in
    assert advise(slug, hours=168).ok


def test_short_jobs_ask_for_their_duration():
    assert advise("narval", hours=0.5).resources.time == "0-00:30:00"
    assert advise("narval", hours=1.01).resources.time == "0-01:01:00"


def test_many_similar_runs_suggest_a_job_array():
    rec = advise("narval", similar_runs=20)
    tip = note(rec.tips, "similar_runs_array")
    assert "--array=1-20" in tip.message
    assert tip.source == sources.SIMILAR_JOBS
    assert "similar_runs_array" not in codes(advise("narval").tips)


def test_similar_runs_of_a_chain_are_not_dropped_without_a_word():
    # The chain's --array=1-3%1 is the script's array: it is one run, and the tip of an array of
    # 4 runs would be wrong. Found by the composer's invariants.
    rec = advise("narval", hours=60, checkpointing=True, similar_runs=4)
    assert rec.chain.jobs == 3
    assert "similar_runs_array" not in codes(rec.tips)
    warning = note(rec.warnings, "similar_runs_with_chain")
    assert warning.field == "similar_runs"
    assert "this script is one run" in warning.message and "own job name" in warning.message


def test_debugging_is_tried_interactively_first():
    rec = advise("narval", workload=Workload.DEBUGGING)
    assert note(rec.tips, "try_interactively").source == sources.INTERACTIVE_FIRST


def test_training_gets_utilization_advice_with_its_cpus():
    rec = advise("beluga", dataset_gb=50)
    assert "num_workers=10" in note(rec.tips, "dataloader").message
    assert note(rec.tips, "utilization_target").source == sources.UTILIZATION_TARGET
    assert "more than 90%" in note(rec.tips, "utilization_target").message


def test_the_dgx_cluster_is_guidance_only():
    rec = advise("dgx")
    assert rec.guidance_only
    assert "Run:ai" in note(rec.warnings, "guidance_only").message
    assert not advise("narval").guidance_only


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"dataset_gb": -1}, "dataset_gb", "cannot be negative"),
        ({"hours": 0}, "hours", "more than zero hours"),
        ({"hours": -3}, "hours", "more than zero hours"),
        ({"file_count": -5}, "file_count", "cannot be negative"),
        ({"gpu_count": 0}, "gpu_count", "at least one GPU"),
        ({"nodes": 0}, "nodes", "at least one node"),
        ({"gpu_mem_gb": 0}, "gpu_mem_gb", "more than zero GB"),
        ({"similar_runs": 0}, "similar_runs", "at least one"),
    ],
)
def test_bad_values_are_errors_on_their_field(fields, field, words):
    rec = advise("narval", **fields)
    assert not rec.ok
    assert rec.storage is None
    assert any(e.field == field and words in e.message for e in rec.errors), rec.errors


def test_the_engine_imports_no_django():
    code = "import sys, guidance.engine; sys.exit('django' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_dataloader_workers_are_counted_per_process():
    # torchrun starts one process per GPU: 4 GPUs with 48 CPUs give 12 workers each, not 48.
    ddp = advise("narval", gpu_count=4, multi_gpu=True, command="torchrun --nproc-per-node=4 t.py")
    assert (
        "num_workers=12 in each of the 4 processes per node (48 CPUs)"
        in note(ddp.tips, "dataloader").message
    )
    # srun starts a task per GPU, each with its own 12 CPUs.
    tasks = advise("narval", gpu_count=4, multi_gpu=True, command="srun python t.py")
    assert "num_workers=12 (the CPUs of each process)" in note(tasks.tips, "dataloader").message
    one = advise("narval", gpu_count=1)
    assert "num_workers=12 (the CPUs of each process)" in note(one.tips, "dataloader").message


def test_a_node_type_with_less_per_gpu_than_the_ratio_gets_its_own_split():
    # Graham's v100 nodes: 28 CPUs and 183000M for 8 GPUs, not the 16 and 64000M of its p100s.
    rec = advise("graham", gpu_type="v100", gpu_count=4, multi_gpu=True, dataset_gb=50)
    r = rec.resources
    assert r.cpus_per_task.value * r.tasks_per_node.value == 4 * 3
    assert r.mem == f"{4 * 22875}M"
    assert "28 CPUs for 8 GPUs" in r.cpus_per_task.reason
    assert "183000M for 8 GPUs" in r.memory_mb.reason
    assert r.cpus_per_task.source == rec.choice.partition.source


def test_gpus_that_do_not_divide_by_the_nodes_are_rounded_with_a_warning():
    rec = advise("narval", gpu_count=6, nodes=4, multi_gpu=True, dataset_gb=50)
    assert rec.resources.gpus_per_node.value * rec.resources.nodes.value == 8
    warning = note(rec.warnings, "gpus_rounded_to_nodes")
    assert warning.field == "gpu_count" and "8 in all" in warning.message


def test_fewer_gpus_than_nodes_gives_each_node_one_with_a_warning():
    rec = advise("narval", gpu_count=4, nodes=100, multi_gpu=True, dataset_gb=50)
    assert rec.resources.gpus_per_node.value * rec.resources.nodes.value == 100
    warning = note(rec.warnings, "fewer_gpus_than_nodes")
    assert warning.field == "gpu_count" and "100 in all" in warning.message
