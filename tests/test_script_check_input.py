"""Check my script: whatever is pasted, the checker answers quickly and never raises."""

import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guidance.engine.script_check import MAX_CHARS, check_script
from guidance.seed import CLUSTERS
from tests.engine_helpers import cluster
from tests.script_check_helpers import GOOD, checked


def test_a_huge_script_is_cut_and_says_so():
    text = GOOD + "echo x\n" * (MAX_CHARS // 7)
    result = check_script(text, cluster("narval"))
    assert result.truncated
    assert [n.code for n in result.notes] == ["truncated"]
    assert "200 kB" in result.notes[0].message


def test_a_script_of_comments_only_is_not_a_batch_script():
    notes = checked("#!/bin/bash\n# nothing yet\n")
    assert [n.code for n in notes] == ["not_a_batch_script"]


@pytest.mark.parametrize(
    "text",
    [
        "srun " * 40_000,
        "A=$A$A\n" * 5_000,
        "#SBATCH " + "-" * 150_000,
        "#!/bin/bash\n#SBATCH --gres=gpu:4\n" + "xargs " * 30_000,
        "#!/bin/bash\n" + "python train.py " * 12_000 + "\n",
        "'" * 100_000,
    ],
)
def test_pathological_input_is_quick(text):
    # The process's own CPU time: on a loaded machine (tests in parallel) the wall clock also
    # counts other processes' turns; a backtracking regex costs CPU whatever else runs.
    start = time.process_time()
    check_script(text, cluster("narval"))
    assert time.process_time() - start < 2


FRAGMENTS = [
    "#!/bin/bash",
    "#SBATCH --time=1-00:00",
    "#SBATCH -t",
    "#SBATCH --gres=gpu:a100:",
    "#SBATCH --gpus-per-task=2 -n",
    "#SBATCH -N 2-4 --array=1-3%1",
    "#SBATCH --time=99999999999",
    "  #SBATCH --mem=1G",
    "DATA=$SLURM_TMPDIR/d",
    "A=$A$A",
    "cd /project/x && tar xf d.tar",
    "python train.py --data /project/d \\",
    "srun python train.py $DATA &",
    'echo "unclosed',
    "if [ -z $X ]; then torchrun train.py; fi",
    "# comment",
    "",
]


@settings(max_examples=300, deadline=None)
@given(
    st.text() | st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=20)).map("\n".join),
    st.sampled_from([c.facts for c in CLUSTERS]),
)
def test_it_never_raises(text, facts):
    result = check_script(text, facts)
    assert all(n.code and n.message for n in result.notes)


def test_the_checker_imports_no_django():
    code = "import sys, guidance.engine.script_check; sys.exit('django' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
