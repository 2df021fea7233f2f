"""Check my script: the fixed script agrees with its findings, and each node type gets its own
share of CPUs and memory per GPU (the composer's, guidance.engine.gpu_share)."""

import pytest

from guidance.engine.script_check import Basis, Severity, check_script
from tests.engine_helpers import cluster, codes, note
from tests.script_check_helpers import checked

TOP = "#!/bin/bash\n#SBATCH --account=def-someuser\n#SBATCH --time=0-03:00\n"
# The program behind `python train.py`, given beside the script: it uses the one GPU it moves to.
ONE_GPU_PROGRAM = {"train.py": "import torch\nmodel = torch.nn.Linear(8, 2).to('cuda')\n"}


def fixed(text: str, slug: str, program: dict[str, str] | None = None) -> str:
    result = check_script(text, cluster(slug), program=program)
    assert result.fixed is not None, result.notes
    return result.fixed


def sbatch_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("#SBATCH")]


def test_a_program_on_one_of_four_gpus_gets_one_gpu_and_its_share():
    text = TOP + "#SBATCH --gres=gpu:4 --cpus-per-task=48 --mem=498000M\npython train.py\n"
    result = check_script(text, cluster("narval"), program=ONE_GPU_PROGRAM)
    assert {"multi_gpu_without_launcher", "too_many_cpus", "memory_over_share"} <= codes(
        result.notes
    )
    assert note(result.notes, "multi_gpu_without_launcher").basis == Basis.PROGRAM
    assert "#SBATCH --gres=gpu:1 --cpus-per-task=12 --mem=124500M" in sbatch_lines(result.fixed)
    assert check_script(result.fixed, cluster("narval"), program=ONE_GPU_PROGRAM).notes == ()


def test_without_the_program_four_gpus_are_asked_about_and_kept():
    # The program may use all four itself (a Trainer, device_map="auto"): a question, no edit,
    # and the CPUs and memory judged for the four GPUs asked for.
    text = TOP + "#SBATCH --gres=gpu:4 --cpus-per-task=48 --mem=498000M\npython train.py\n"
    result = check_script(text, cluster("narval"))
    asked = note(result.notes, "multi_gpu_without_launcher")
    assert (asked.severity, asked.basis, asked.edits) == (Severity.ADVICE, Basis.QUESTION, ())
    assert "?" in asked.message
    assert codes(result.notes) == {"multi_gpu_without_launcher"}
    assert result.fixed is None


@pytest.mark.parametrize(
    "spreading",
    [
        "from transformers import Trainer\nTrainer(model=m, args=a).train()\n",
        "from transformers import AutoModel\nAutoModel.from_pretrained(p, device_map='auto')\n",
        "import torch.nn as nn\nmodel = nn.DataParallel(net).cuda()\n",
        "import torch.multiprocessing as mp\nmp.spawn(worker, nprocs=4)\n",
        "from ray import tune\ntune.Tuner(train).fit()\n",
        "import lightning as L\nL.Trainer(accelerator='gpu', devices=4).fit(m)\n",
        "import lightning as L\nL.Trainer(devices=args.gpus).fit(m)\n",
    ],
)
def test_a_program_that_spreads_itself_keeps_its_gpus(spreading):
    text = TOP + "#SBATCH --gres=gpu:4 --cpus-per-task=48 --mem=498000M\npython train.py\n"
    notes = check_script(text, cluster("narval"), program={"train.py": spreading}).notes
    assert notes == ()


def test_a_lightning_trainer_on_one_device_uses_one_gpu():
    program = {"train.py": "import lightning as L\nL.Trainer(devices=1).fit(m)\n"}
    text = TOP + "#SBATCH --gres=gpu:4 --cpus-per-task=48 --mem=498000M\npython train.py\n"
    notes = check_script(text, cluster("narval"), program=program).notes
    found = note(notes, "multi_gpu_without_launcher")
    assert (found.severity, found.basis) == (Severity.WASTES, Basis.PROGRAM)


CLI = "from lightning.pytorch.cli import LightningCLI\nLightningCLI(Model, Data{})\n"


@pytest.mark.parametrize(
    ("defaults", "command", "idle"),
    [
        ("", "python cli.py fit", False),  # devices "auto": every GPU the job holds
        (", trainer_defaults={'devices': 1}", "python cli.py fit", True),
        ("", "python cli.py fit --trainer.devices=1", True),
        ("", "python cli.py fit --trainer.devices 1", True),
        (", trainer_defaults={'devices': 1}", "python cli.py fit --trainer.devices 4", False),
        (", trainer_defaults=dict(devices=1)", "python cli.py fit", True),
    ],
)
def test_a_lightning_cli_uses_the_devices_its_defaults_or_command_give(defaults, command, idle):
    text = TOP + "#SBATCH --gres=gpu:4 --cpus-per-task=48 --mem=498000M\n" + command + "\n"
    program = {"cli.py": CLI.format(defaults)}
    found = [n for n in check_script(text, cluster("narval"), program=program).notes]
    idle_notes = [n for n in found if n.code == "multi_gpu_without_launcher"]
    assert bool(idle_notes) == idle, found
    assert all(n.basis == Basis.PROGRAM for n in idle_notes)


def test_one_gpu_is_never_given_the_cpus_of_four():
    # 16 loader workers on the one CPU a task gets: the CPUs asked for stop at one GPU's share.
    loads = (
        ONE_GPU_PROGRAM["train.py"] + "loader = torch.utils.data.DataLoader(d, num_workers=16)\n"
    )
    text = TOP + "#SBATCH --gres=gpu:a100:4\npython train.py\n"
    lines = sbatch_lines(fixed(text, "narval", {"train.py": loads}))
    assert "#SBATCH --gres=gpu:a100:1" in lines
    assert "#SBATCH --cpus-per-task=12" in lines
    assert not any("48" in line for line in lines)


def test_a_program_on_several_nodes_keeps_its_gpu_request():
    text = TOP + "#SBATCH --nodes=2 --gres=gpu:2 --cpus-per-task=24\npython train.py\n"
    found = note(check_script(text, cluster("narval")).notes, "multi_gpu_without_launcher")
    assert found.edits == ()


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("--mem-4G", "--mem=4G"),
        ("--mem4G", "--mem=4G"),
        ("--mem= 4G", "--mem=4G"),
        ("--cpus=6", "--cpus-per-task=6"),
        ("--mail=me@example.org", "--mail-user=me@example.org"),
        ("--tim=0-03:00", "--time=0-03:00"),
    ],
)
def test_a_malformed_option_becomes_what_sbatch_takes(written, meant):
    text = TOP.replace("--time=0-03:00", "--time=0-03:00 --gres=gpu:1") + f"#SBATCH {written}\n"
    assert f"#SBATCH {meant}" in sbatch_lines(fixed(text + "python train.py\n", "narval"))


@pytest.mark.parametrize("written", ["--m=4G", "--c=6", "--mail=END"])
def test_it_does_not_guess_from_a_letter_or_a_value_that_says_nothing(written):
    text = TOP + f"#SBATCH --gres=gpu:1 --cpus-per-task=6\n#SBATCH {written}\npython train.py\n"
    result = check_script(text, cluster("narval"))
    assert "unknown_option" in codes(result.notes)
    assert result.fixed is None or f"#SBATCH {written}" in result.fixed


def test_every_change_to_one_line_applies():
    text = (
        "#!/bin/bash\n#SBATCH --time=8-00:00 --gres=gpu:4 --exclusive --job-name='my run'\n"
        "#SBATCH --account=def-someuser\npython train.py\n"
    )
    lines = sbatch_lines(fixed(text, "narval", ONE_GPU_PROGRAM))
    assert lines[0] == "#SBATCH --time=7-00:00:00 --gres=gpu:1 --job-name='my run'"
    assert "#SBATCH --mem=124500M" in lines


def test_a_v100l_may_have_its_nodes_eight_cpus():
    # Cedar's v100l nodes: 32 CPUs for 4 GPUs (seed), over the 6 per GPU of 002's ratio.
    text = TOP + "#SBATCH --gres=gpu:v100l:1 --cpus-per-task=8 --mem=32000M\npython train.py\n"
    assert checked(text, "cedar") == ()
    nine = checked(text.replace("=8", "=9"), "cedar")
    assert "8 per GPU" in note(nine, "too_many_cpus").message


def test_a_graham_v100_gets_its_nodes_share():
    # Graham's v100 nodes: 28 CPUs and 183000M for 8 GPUs (seed): 3 CPUs and 22875M each.
    text = TOP + "#SBATCH --gres=gpu:v100:1 --cpus-per-task=16 --mem=64000M\npython train.py\n"
    assert {"too_many_cpus", "memory_over_share"} <= codes(checked(text, "graham"))
    lines = sbatch_lines(fixed(text, "graham"))
    assert "#SBATCH --gres=gpu:v100:1 --cpus-per-task=3 --mem=22875M" in lines


def test_any_gpu_is_judged_by_the_most_generous_node_type_and_fixed_to_the_least():
    # --gres=gpu:1 on Graham lands on p100 (16 CPUs, 64000M per GPU), v100 or t4 nodes.
    text = TOP + "#SBATCH --gres=gpu:1 --cpus-per-task=16 --mem=64000M\npython train.py\n"
    assert checked(text, "graham") == ()
    over = TOP + "#SBATCH --gres=gpu:1 --cpus-per-task=20 --mem=64000M\npython train.py\n"
    assert "--cpus-per-task=3" in note(checked(over, "graham"), "too_many_cpus").fix
