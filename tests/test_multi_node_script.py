"""What a script on several nodes says, from the composer's form (tests/test_script_matrix.py runs
each kind on the dev cluster: every node's folders, the user's own srun, the rendezvous)."""

from jobs.compose.forms import ComposeForm
from jobs.compose.from_form import compose

TWO_NODES = {
    "cluster": "narval",
    "job_name": "ddp",
    "account": "def-someone",
    "workload": "training",
    "dataset_gb": "50",
    "file_count": "",
    "data_path": "$PROJECT/data/imagenet.tar",
    "gpu_count": "8",
    "multi_gpu": "on",
    "hours": "12",
    "nodes": "2",
    "similar_runs": "1",
    "environment": "none",
    "command": "python train.py",
    "results_dir": "$SCRATCH/results",
}
WRAPPED = (
    "srun --overlap --kill-on-bad-exit=1 --export=ALL "
    """bash -c 'run_on_node "$1"' run_on_node "$JOB_COMMAND" &"""
)


def _script(seeded, **changes) -> str:
    form = ComposeForm(TWO_NODES | changes)
    composed = compose(form)
    assert composed is not None, form.errors
    return composed.script


def test_the_users_own_srun_runs_once_and_gets_a_task_per_gpu(seeded):
    script = _script(seeded, command="srun python train.py")
    assert WRAPPED not in script
    assert "# Once, here: the command starts its own tasks" in script
    assert '\nbash -c "$JOB_COMMAND" &\n' in script
    assert "#SBATCH --ntasks-per-node=4" in script
    assert "#SBATCH --cpus-per-task=12" in script


def test_a_command_the_user_says_starts_its_own_tasks_is_not_wrapped(seeded):
    script = _script(seeded, command="bash launch.sh", launch="gpu-tasks")
    assert WRAPPED not in script
    assert "#SBATCH --ntasks-per-node=4" in script


def test_a_plain_command_runs_once_on_every_node_with_its_rank(seeded):
    script = _script(seeded)
    assert WRAPPED in script
    assert 'export NODE_RANK="$SLURM_NODEID"' in script
    assert "WORLD_SIZE=$((NNODES * GPUS_PER_NODE))" in script
    assert "GPUS_PER_NODE=4" in script


def test_every_node_makes_its_results_folder_and_sends_back_what_it_wrote(seeded):
    script = _script(seeded)
    assert 'srun --ntasks=$SLURM_NNODES --ntasks-per-node=1 mkdir -p "$RESULTS_DIR"' in script
    assert 'rsync -a --update "$RESULTS_DIR"/ "$RESULTS_DEST/node-$rank"/' in script
    # Read in place, RESULTS_DIR is the shared destination: each other node writes its own.
    shared = _script(seeded, dataset_gb="500")
    assert 'RESULTS_DIR="$RESULTS_DEST/node-$NODE_RANK"' in shared


def test_a_warning_before_the_program_starts_is_passed_on_once_it_has(seeded):
    script = _script(seeded, checkpointing="on", nodes="1", gpu_count="1", multi_gpu="")
    assert "usr1_pending=1" in script
    assert '{ sleep 30; kill -USR1 "$program" 2>/dev/null || true; } &' in script
    # One GPU on one node: nothing to meet, no rendezvous.
    assert "MASTER_ADDR" not in script
