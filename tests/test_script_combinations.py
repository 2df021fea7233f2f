"""Every storage tier x chain x nodes x template gives a valid script equal to its expected file.

Regenerate the expected files after a deliberate change with UPDATE_EXPECTED=1, and read the diff.
"""

import itertools
import os
import subprocess
from pathlib import Path

import pytest

from guidance.engine import Placement
from jobs.compose.forms import ComposeForm
from jobs.compose.from_form import compose
from jobs.compose.site_templates import TEMPLATES
from tests.test_multi_node_script import WRAPPED as RUN_ON_EVERY_NODE

EXPECTED = Path(__file__).parent / "expected_scripts"
STORAGE = {  # name: (cluster, dataset GB, file count)
    "memory": ("narval", 5, 0),
    "node-local": ("narval", 50, 200_000),
    "shared": ("narval", 500, 0),
    "local-scratch": ("processing", 50, 0),
}
CHAIN = {"single": ("12", False), "chain": ("72", True)}
NODES = {"1node": ("1", "1", False), "2nodes": ("2", "8", True)}
# The first training and inference templates (the others: tests/test_site_templates.py).
SLUGS = ["pytorch-training-1gpu", "inference"]
COMBINATIONS = list(itertools.product(STORAGE, CHAIN, NODES, SLUGS))


def _form_data(storage: str, chain: str, nodes: str, template: str) -> dict:
    cluster, dataset_gb, file_count = STORAGE[storage]
    hours, checkpointing = CHAIN[chain]
    node_count, gpus, multi_gpu = NODES[nodes]
    fields = next(t["fields"] for t in TEMPLATES if t["slug"] == template)
    data = {name: str(value) for name, value in fields.items()} | {
        "cluster": cluster,
        "account": "def-someuser",
        "dataset_gb": str(dataset_gb),
        "file_count": str(file_count),
        "data_path": "/project/def-someuser/dataset" + (".tar" if file_count else ""),
        "hours": hours,
        "nodes": node_count,
        "gpu_count": gpus,
        "similar_runs": "1",
        "mail_user": "someone@example.org",
    }
    if cluster == "processing":
        data["modules"] = ""  # its jobs have no module command
        # It publishes no results directory (000 names project folders, no path): the user's.
        data["results_dir"] = "/project/def-someuser/results"
    if checkpointing:
        data["checkpointing"] = "on"
    if multi_gpu:
        data["multi_gpu"] = "on"
        data["gpu_mem_gb"] = "20"  # processing: two nodes of 4 GPUs need the A6000 or RTX nodes
    return data


@pytest.mark.parametrize(("storage", "chain", "nodes", "template"), COMBINATIONS)
def test_each_combination_renders_its_expected_script(seeded, storage, chain, nodes, template):
    form = ComposeForm(_form_data(storage, chain, nodes, template))
    composed = compose(form)
    assert composed is not None, form.errors
    text = composed.script
    assert subprocess.run(["bash", "-n"], input=text.encode(), check=False).returncode == 0

    expected = EXPECTED / f"{storage}-{chain}-{nodes}-{template}.sbatch"
    if os.environ.get("UPDATE_EXPECTED") == "1":
        expected.write_text(text)
    assert text == expected.read_text()

    for directive in (
        "#SBATCH --job-name=",
        "#SBATCH --account=def-someuser",
        f"#SBATCH --nodes={NODES[nodes][0]}",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --gres=gpu:",
        "#SBATCH --cpus-per-task=",
        "#SBATCH --mem=",
        "#SBATCH --time=",
        "#SBATCH --output=portal-jobs/",
        "#SBATCH --error=portal-jobs/",
        "#SBATCH --mail-type=END,FAIL",
        "set -euo pipefail",
        "trap finish EXIT",
        "# >>> GPU monitoring starts here",
        "# <<< GPU monitoring stops here",
        '"$JOB_COMMAND" &',
    ):
        assert directive in text, directive
    if chain == "chain":
        assert "#SBATCH --array=1-3%1" in text
        assert "#SBATCH --signal=B:USR1@300" in text
        assert "LAST_CHECKPOINT=$(find" in text
    else:
        assert "--array" not in text
    # Inference may read from the network (000): then nothing is staged or copied back.
    staged = composed.recommendation.storage.placement != Placement.SHARED
    assert staged or storage == "shared" or template == "inference"
    if staged:
        assert 'rsync -a --update "$RESULTS_DIR"/ "$RESULTS_DEST"/' in text  # copy-back
        if nodes == "2nodes":
            assert "srun --ntasks=$SLURM_NNODES --ntasks-per-node=1 mkdir" in text
    else:
        assert 'STAGE_DIR="$DATA_SOURCE"' in text
    if storage == "node-local":
        assert 'tar -xf "$DATA_SOURCE" -C "$STAGE_DIR"' in text  # 200,000 files: an archive
    if storage == "local-scratch" and staged:
        assert 'WORK_DIR="$SCRATCH/$SLURM_JOB_ID"' in text
        assert 'rm -rf "$WORK_DIR"' in text
    if nodes == "2nodes":  # once on every node, where each finds the others
        assert RUN_ON_EVERY_NODE in text
        assert "export MASTER_ADDR MASTER_PORT NNODES GPUS_PER_NODE WORLD_SIZE" in text


def test_the_salloc_line_matches_the_scripts_resources(seeded):
    form = ComposeForm(_form_data("node-local", "chain", "2nodes", "pytorch-training-1gpu"))
    composed = compose(form)
    spec = composed.spec
    assert composed.salloc == (
        f"salloc --account=def-someuser --nodes=2 --ntasks-per-node=1 "
        f"--gres=gpu:{spec.gpu_type}:4 --cpus-per-task={spec.cpus_per_task} --mem={spec.mem} "
        "--time=1:00:00"
    )
    for directive in (f"--gres=gpu:{spec.gpu_type}:4", f"--cpus-per-task={spec.cpus_per_task}"):
        assert f"#SBATCH {directive}" in composed.script
