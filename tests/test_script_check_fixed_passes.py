"""Check my script: the fixed script is one sbatch and bash take, and checking it again brings
back none of the findings whose fixes it applied. For every script of the corpus, and scripts
drawn from the mistakes people make (options run together, several GPUs for one process, a whole
node, CPUs and memory off their share, limits over the maximum)."""

import os
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guidance.engine.script_check import check_script
from guidance.engine.script_check.parse import parse_script
from tests.engine_helpers import cluster
from tests.script_corpus_helpers import check, load_corpus

CASES = load_corpus()


def _assert_fixed_passes(text: str, slug: str) -> None:
    result = check_script(text, cluster(slug))
    if result.fixed is None:
        return
    syntax = subprocess.run(
        ["bash", "-n"], input=result.fixed, capture_output=True, text=True, check=False
    )
    assert syntax.returncode == 0, (syntax.stderr, result.fixed)
    # What sbatch refuses in the fixed script: only what the checker has no fix for, as pasted.
    unfixed = {
        r.written
        for r in parse_script(text).refused
        for n in result.notes
        if n.message.startswith(f"Line {r.line}: {r.why}.") and not n.edits
    }
    left = {r.written for r in parse_script(result.fixed).refused}
    assert left <= unfixed, (left, result.fixed)
    # The refused options' findings are one code for many options: compared above, one by one.
    fixed_codes = {n.code for n in result.notes if n.edits} - {"unknown_option", "missing_value"}
    again = {n.code for n in check_script(result.fixed, cluster(slug)).notes}
    assert not fixed_codes & again, (fixed_codes & again, result.fixed)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_corpus_script_is_fixed_for_good(case):
    assert check(case) is not None
    _assert_fixed_passes(case.text, case.cluster)


GPU_TYPES = {
    "narval": ("a100",),
    "beluga": ("v100",),
    "cedar": ("p100", "p100l", "v100l"),
    "graham": ("p100", "v100", "t4"),
    "processing": ("a100", "a6000", "rtx"),
}


@st.composite
def scripts(draw) -> tuple[str, str]:
    slug = draw(st.sampled_from(sorted(GPU_TYPES)))
    count = draw(st.integers(1, 4))
    kind = draw(st.sampled_from((None, *GPU_TYPES[slug])))
    typed = f"{kind}:{count}" if kind else str(count)
    options = [
        draw(
            st.sampled_from((f"--gres=gpu:{typed}", f"--gpus-per-node={typed}", f"--gpus={typed}"))
        ),
        draw(
            st.sampled_from(
                ("", "--cpus-per-task=1", "--cpus-per-task=6", "--cpus-per-task=48", "--cpus=8")
            )
        ),
        draw(
            st.sampled_from(
                (
                    "",
                    "--mem=4G",
                    "--mem=400G",
                    "--mem-4G",
                    "--mem4G",
                    "--mem= 8G",
                    "--mem=0",
                    "--mem-per-cpu=8G",
                    "--mem-per-gpu=200G",
                )
            )
        ),
        draw(st.sampled_from(("", "--time=0-03:00", "--time=40-00:00", "--tim=1:00:00", "--m=4G"))),
        draw(st.sampled_from(("", "--exclusive", "--mail=me@example.org", "--job-name='a b'"))),
        draw(st.sampled_from(("", "--account=def-someuser"))),
        draw(st.sampled_from(("", "--ntasks-per-node=2", "--nodes=2", "--partition=other"))),
    ]
    options = [o for o in options if o]
    split = draw(st.integers(1, len(options)))  # options on one line, the rest on their own
    lines = [" ".join(options[:split]), *options[split:]]
    body = draw(
        st.sampled_from(
            (
                "python train.py",
                "srun python train.py",
                "torchrun --nproc_per_node=1 train.py",
                f"torchrun --nproc_per_node={count} train.py",
            )
        )
    )
    text = "#!/bin/bash\n" + "".join(f"#SBATCH {line}\n" for line in lines) + body + "\n"
    return text, slug


@settings(
    max_examples=int(os.environ.get("FIXED_SCRIPT_EXAMPLES", "100")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(scripts())
def test_a_drawn_script_is_fixed_for_good(drawn):
    _assert_fixed_passes(*drawn)
