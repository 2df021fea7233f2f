"""What a finding is read from, over drawn scripts and programs: a finding that hangs on a
program the checker was not given is a question (advice, no edit), one read from the program
appears only when a program was given, and a program given that parses settles every such
question (one that does not parse settles nothing)."""

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guidance.engine.code_check.beside_script import readable
from guidance.engine.script_check import Basis, Severity, check_script
from tests.engine_helpers import cluster
from tests.test_script_check_fixed_passes import scripts

# Programs in the shapes that decide what the script checker asks of them.
PROGRAMS = (
    None,
    {"train.py": "import torch\nmodel = torch.nn.Linear(4, 2).cuda()\n"},
    {"train.py": "from transformers import Trainer\nTrainer(model=m).train()\n"},
    {"train.py": "import torch\nmodel.load_state_dict(torch.load('last.pt'))\n"},
    {
        "train.py": "import argparse\np = argparse.ArgumentParser()\n"
        "p.add_argument('--data', default='/project/def-me/set')\n"
    },
    {"notes.txt": "not python", "train.py": "def broken(:\n"},
    {"train.py": "import torch\nloader = torch.utils.data.DataLoader(ds, num_workers=8)\n"},
)
# Chains and requeues, for the questions about resuming.
CHAINS = ("", "#SBATCH --array=1-4%1\n", "#SBATCH --requeue\n")


@settings(
    max_examples=int(os.environ.get("FIXED_SCRIPT_EXAMPLES", "100")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(scripts(), st.sampled_from(PROGRAMS), st.sampled_from(CHAINS))
def test_questions_are_asked_only_without_the_program(drawn, program, chain):
    text, slug = drawn
    text = text.replace("\n", "\n" + chain, 1)
    notes = check_script(text, cluster(slug), program=program).notes
    for finding in notes:
        if finding.basis == Basis.QUESTION:
            assert (finding.severity, finding.edits) == (Severity.ADVICE, ()), finding
        if finding.basis == Basis.PROGRAM:
            assert readable(program), finding
    if readable(program):  # a program that does not parse settles nothing
        # Every loader these programs have states its workers: whether few CPUs matter is
        # settled too (a count the files do not fix would leave it asked).
        settled = {"multi_gpu_without_launcher", "chain_without_resume", "too_few_cpus"}
        asked = [f for f in notes if f.basis == Basis.QUESTION and f.code in settled]
        assert not asked, asked
