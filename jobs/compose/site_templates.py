"""The site templates the portal starts with; admins edit them and add their own.

Each is written for the clusters whose jobs have what it uses: the Alliance clusters load modules
and build virtualenvs from the site's wheels; the local-SSD site and the dev cluster have no module
command and build them with python3 -m venv. `clusters` lists their slugs (those that exist are
linked when the template is created).
"""

from guidance.engine import Launch
from guidance.engine.launch import ready_command

ALLIANCE = ("beluga", "cedar", "graham", "narval")
OWN_PYTHON = ("processing", "local")

TRAIN = (
    'python train.py --data "$DATA_PATH" --output "$RESULTS_DIR" --checkpoints "$CHECKPOINT_DIR"'
)
PREDICT = 'python predict.py --input "$DATA_PATH" --output "$RESULTS_DIR"'
# torchrun started once on every node by the script, each finding the first node.
TRAIN_ACROSS_NODES = ready_command(Launch.NODE).replace(
    "train.py", 'train.py --data "$DATA_PATH" --output "$RESULTS_DIR"'
)


def _results(modules: str, name: str) -> dict:
    """The Alliance sites keep results in the group's project space (004); elsewhere the
    cluster's own default results directory applies (its published policy)."""
    return {"results_dir": f"$PROJECT/results/{name}"} if modules else {}


def _training(modules: str) -> dict:
    return {
        "job_name": "train",
        "workload": "training",
        "gpu_count": 1,
        "modules": modules,
        "environment": "requirements",
        "environment_path": "$HOME/requirements.txt",
        "command": TRAIN,
    } | _results(modules, "train")


def _inference(modules: str) -> dict:
    return {
        "job_name": "infer",
        "workload": "inference",
        "gpu_count": 1,
        "modules": modules,
        "environment": "venv",
        "environment_path": "$HOME/venvs/inference",
        "command": PREDICT,
    } | _results(modules, "inference")


def _across_nodes(modules: str, gpus_per_node: int) -> dict:
    return (
        _training(modules)
        | {
            "job_name": "train-ddp",
            "gpu_count": 2 * gpus_per_node,
            "nodes": 2,
            "multi_gpu": True,
            "command": TRAIN_ACROSS_NODES,
        }
        | _results(modules, "train-ddp")
    )


ALLIANCE_MODULES = "python/3.11 cuda cudnn"
TRAINING_NOTE = (
    "Trains on one GPU from data staged to node-local storage, with a virtualenv built on the "
    "node from your requirements file."
)
INFERENCE_NOTE = (
    "Runs a trained model over a dataset, reading from network storage where that is allowed, "
    "with an existing virtualenv."
)
ACROSS_NODES_NOTE = (
    "DistributedDataParallel on every GPU of two nodes: the script starts torchrun on each node "
    "and tells it where the first node listens (MASTER_ADDR, MASTER_PORT)."
)

TEMPLATES = [
    {
        "slug": "pytorch-training-1gpu",
        "name": "PyTorch training, one GPU",
        "description": TRAINING_NOTE + " Loads the site's Python, CUDA and cuDNN modules.",
        "order": 10,
        "clusters": ALLIANCE,
        "fields": _training(ALLIANCE_MODULES),
    },
    {
        "slug": "pytorch-training-1gpu-venv",
        "name": "PyTorch training, one GPU",
        "description": TRAINING_NOTE + " No modules: the Python on the node.",
        "order": 11,
        "clusters": OWN_PYTHON,
        "fields": _training(""),
    },
    {
        "slug": "pytorch-ddp-2nodes",
        "name": "PyTorch on two nodes (torchrun)",
        "description": ACROSS_NODES_NOTE,
        "order": 15,
        "clusters": ALLIANCE,
        "fields": _across_nodes(ALLIANCE_MODULES, gpus_per_node=4),
    },
    {
        "slug": "pytorch-ddp-2nodes-venv",
        "name": "PyTorch on two nodes (torchrun)",
        "description": ACROSS_NODES_NOTE + " No modules: the Python on the node.",
        "order": 16,
        "clusters": OWN_PYTHON,
        "fields": _across_nodes("", gpus_per_node=2),
    },
    {
        "slug": "inference",
        "name": "Inference",
        "description": INFERENCE_NOTE,
        "order": 20,
        "clusters": ALLIANCE,
        "fields": _inference(ALLIANCE_MODULES),
    },
    {
        "slug": "inference-venv",
        "name": "Inference",
        "description": INFERENCE_NOTE + " No modules.",
        "order": 21,
        "clusters": OWN_PYTHON,
        "fields": _inference(""),
    },
]
