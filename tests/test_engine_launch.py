"""How the user's command starts on the nodes: told from its words or chosen, and what it changes
in what Slurm is asked for."""

import pytest

from guidance.engine import Launch, sources
from guidance.engine.launch import launch_of, ready_command
from tests.engine_helpers import advise, codes, note

EIGHT_GPUS_ON_TWO_NODES = {"nodes": 2, "multi_gpu": True, "gpu_count": 8}


@pytest.mark.parametrize(
    ("command", "launch"),
    [
        ("python train.py", Launch.NODE),
        ('torchrun --nnodes="$NNODES" --nproc_per_node=4 train.py', Launch.NODE),
        ("python -m torch.distributed.run --nnodes 2 train.py", Launch.NODE),
        ("accelerate launch --num_machines 2 train.py", Launch.NODE),
        ("srun python train.py", Launch.GPU_TASKS),
        ("cd ~/code && srun --ntasks-per-node=4 python train.py", Launch.GPU_TASKS),
        ("NCCL_DEBUG=INFO time srun python train.py", Launch.GPU_TASKS),
        ("/usr/bin/srun python train.py", Launch.GPU_TASKS),
        ("mpirun -np 8 ./solver", Launch.GPU_TASKS),
        ("mpiexec ./solver", Launch.GPU_TASKS),
        ("deepspeed train.py --deepspeed ds.json", Launch.GPU_TASKS),
        ("srun torchrun --nnodes=2 train.py", Launch.NODE_TASKS),
        ("srun accelerate launch train.py", Launch.NODE_TASKS),
        ("srun python -m torch.distributed.run train.py", Launch.NODE_TASKS),
        ("module load cuda\nsrun python train.py", Launch.GPU_TASKS),
        # Past the options of the words that run a command, and inside the shell's own words.
        ("stdbuf -oL srun python train.py", Launch.GPU_TASKS),
        ("timeout -s INT 3h srun python train.py", Launch.GPU_TASKS),
        ("nice -n 10 srun python train.py", Launch.GPU_TASKS),
        ("env -u DISPLAY srun python train.py", Launch.GPU_TASKS),
        ("for seed in 1 2; do srun python train.py --seed $seed; done", Launch.GPU_TASKS),
        ("if true; then srun python train.py; fi", Launch.GPU_TASKS),
        ("{ srun python train.py; }", Launch.GPU_TASKS),
        # One task per node, said by the srun itself or by what it starts.
        ("srun --ntasks-per-node=1 bash run.sh", Launch.NODE_TASKS),
        ('srun bash -c "torchrun --nnodes 2 train.py"', Launch.NODE_TASKS),
        ("timeout 3h python train.py", Launch.NODE),
        # Words that only mention a launcher start nothing.
        ('echo "srun is not used here" && python train.py', Launch.NODE),
        ("python train.py --launcher srun", Launch.NODE),
        ('python -c "unclosed', Launch.NODE),
    ],
)
def test_the_command_tells_how_it_starts(command, launch):
    assert launch_of(command) == launch


def test_a_command_that_starts_a_task_per_gpu_gets_one_task_per_gpu():
    rec = advise("narval", command="srun python train.py", **EIGHT_GPUS_ON_TWO_NODES)
    resources = rec.resources
    assert (resources.tasks_per_node.value, resources.gpus_per_node.value) == (4, 4)
    # The CPUs of one GPU each (narval: 12 per GPU), the node's 48 in all.
    assert resources.cpus_per_task.value == 12
    assert "starts its own tasks" in resources.tasks_per_node.reason
    assert resources.tasks_per_node.source == sources.MULTI_GPU_PYTORCH


@pytest.mark.parametrize("command", ["python train.py", "srun torchrun --nnodes=2 train.py"])
def test_one_launcher_per_node_gets_one_task_with_all_the_nodes_cpus(command):
    resources = advise("narval", command=command, **EIGHT_GPUS_ON_TWO_NODES).resources
    assert (resources.tasks_per_node.value, resources.cpus_per_task.value) == (1, 48)


def test_the_users_choice_wins_over_the_words():
    rec = advise(
        "narval", command="bash run.sh", launch=Launch.GPU_TASKS, **EIGHT_GPUS_ON_TWO_NODES
    )
    assert rec.launch.launch == Launch.GPU_TASKS
    assert rec.launch.told
    assert rec.resources.tasks_per_node.value == 4
    assert rec.resources.tasks_per_node.reason.startswith("You said that the command")


def test_a_distributed_job_is_shown_a_ready_torchrun_command():
    rec = advise("narval", command="python train.py", **EIGHT_GPUS_ON_TWO_NODES)
    tip = note(rec.tips, "distributed_launch")
    assert ready_command(Launch.NODE) in tip.message
    assert "NODE_RANK" in tip.message and tip.field == "command"
    srun = advise("narval", command="srun torchrun train.py", **EIGHT_GPUS_ON_TWO_NODES)
    # Started by the user's srun there is no NODE_RANK: torchrun's own rendezvous finds the nodes.
    assert "--rdzv_backend=c10d" in note(srun.tips, "distributed_launch").message
    assert "distributed_launch" not in codes(advise("narval", command="python train.py").tips)
