"""The checker and the composer agree: every script the composer writes, on every cluster, for
one GPU or four, one node or two, any environment, short or chained, gets no finding."""

import itertools

import pytest

from guidance.engine.script_check import check_script
from guidance.facts import cluster_facts
from jobs.compose.forms import ComposeForm
from jobs.compose.from_form import compose
from tests.test_data_plan import BASE

CLUSTERS = ["narval", "beluga", "cedar", "graham", "processing"]
ENVIRONMENTS = {
    "none": {"modules": "python/3.11 cuda"},
    "venv": {"environment_path": "$HOME/envs/torch"},
    "requirements": {"environment_path": "$HOME/requirements.txt"},
}
COMMANDS = ["python train.py --data $DATA_PATH", "torchrun --nproc_per_node=4 train.py"]


def _form(slug: str, gpus: str, environment: str, hours: str, nodes: str, command: str):
    data = (
        BASE
        | ENVIRONMENTS[environment]
        | {
            "cluster": slug,
            "gpu_count": gpus,
            "environment": environment,
            "hours": hours,
            "nodes": nodes,
            "command": command,
            "checkpointing": "on" if float(hours) > 24 else "",
        }
    )
    if slug == "processing":  # it publishes no modules, and its project storage has no path
        data |= {"modules": "", "data_path": "/project/d/imagenet.tar", "results_dir": "/project/r"}
    return ComposeForm(data)


@pytest.mark.django_db
@pytest.mark.parametrize("slug", CLUSTERS)
def test_every_script_the_composer_writes_passes_the_checker(seeded, slug):
    checked = 0
    for choice in itertools.product(["1", "4"], ENVIRONMENTS, ["3", "72"], ["1", "2"], COMMANDS):
        form = _form(slug, *choice)
        composed = compose(form)
        assert composed is not None and composed.script, (choice, form.errors)
        notes = check_script(composed.script, cluster_facts(form.cleaned_data["cluster"])).notes
        assert [(n.code, n.message) for n in notes] == [], (choice, composed.script)
        checked += 1
    assert checked == 48
