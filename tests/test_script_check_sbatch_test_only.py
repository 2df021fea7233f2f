"""The fixed script the checker offers is one the dev cluster's real sbatch takes: every corpus
script written for the dev cluster's federation profile (alliance-lab), fixed with the dev
cluster's account and the program given beside it, passes `sbatch --test-only`, and a pasted
script with options sbatch does not know is refused as pasted."""

import pytest

from guidance.engine.script_check import check_script
from tests.engine_helpers import DEV_ACCOUNT, cluster
from tests.script_corpus_helpers import load_corpus

CASES = [case for case in load_corpus() if case.cluster == "alliance-lab"]
REFUSED_BY_SBATCH = {"unknown_option", "missing_value", "bad_time", "bad_memory"}


def _test_only(devcluster, text: str):
    # The script goes in on stdin: sbatch reads it from there when given no file.
    return devcluster.ssh(f"sbatch --test-only <<'SCRIPT_EOF'\n{text}SCRIPT_EOF\n")


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_the_fixed_corpus_script_passes_sbatch_test_only(devcluster, case):
    result = check_script(case.text, cluster(case.cluster), DEV_ACCOUNT, case.program)
    fixed = result.fixed if result.fixed is not None else case.text
    answer = _test_only(devcluster, fixed)
    assert answer.returncode == 0 and "to start at" in answer.stderr, (answer.stderr, fixed)
    if REFUSED_BY_SBATCH & set(case.expect):
        assert _test_only(devcluster, case.text).returncode != 0


def test_the_profile_has_scripts_to_test():
    assert len(CASES) >= 3
