"""The fixed script the checker offers runs: a pasted script with the federation's usual slips is
refused by the dev cluster's real sbatch, and the checker's fix of it runs to the end in the
partition that emulates a federation site (per-job $SLURM_TMPDIR, modules, a local wheelhouse
and no internet)."""

import shlex
import time
import uuid
from datetime import UTC, datetime, timedelta

from guidance.engine.script_check import check_script
from jobs.slurm.sacct import parse_sacct, sacct_argv
from jobs.slurm.states import SlurmState
from tests.engine_helpers import ALLIANCE_LAB, codes
from tests.engine_helpers import DEV_ACCOUNT as ACCOUNT

PASTED = """\
#!/bin/bash
#SBATCH --partition=site-alliance
#SBATCH --gres=gpu:a100:1
#SBATCH --mem=6000M
#SBATCH --tim=0:05:00
module load python
echo "started on $SLURMD_NODENAME"
#SBATCH --cpus-per-task=2
virtualenv --no-download "$SLURM_TMPDIR/env"
source "$SLURM_TMPDIR/env/bin/activate"
pip install portal_probe
python -c 'import portal_probe; print("probe says", portal_probe.VALUE)'
"""


def _run(devcluster, text: str, name: str) -> tuple[SlurmState, str]:
    folder = f"script-check-{uuid.uuid4().hex[:8]}"
    since = datetime.now(UTC).replace(tzinfo=None) - timedelta(minutes=2)
    submitted = devcluster.ssh(
        f"mkdir -p {folder} && cat >{folder}/{name}.sh <<'SCRIPT_EOF'\n{text}SCRIPT_EOF\n"
        f"sbatch --parsable --output={folder}/{name}.out {folder}/{name}.sh"
    )
    assert submitted.returncode == 0, submitted.stderr
    job_id = int(submitted.stdout.strip().split(";")[0])
    sacct = shlex.join(sacct_argv(devcluster.user, since, jobs=[job_id]))
    deadline = time.monotonic() + 120
    try:
        while True:
            seen = {j.job_id_raw: j for j in parse_sacct(devcluster.ssh(sacct).stdout)}
            if job_id in seen and seen[job_id].state.is_final:
                output = devcluster.ssh(f"cat {folder}/{name}.out").stdout
                return seen[job_id].state, output
            assert time.monotonic() < deadline, f"job {job_id} did not end: {seen}"
            time.sleep(0.5)
    finally:
        devcluster.ssh(f"rm -rf {folder}")


def test_the_fixed_script_runs_where_the_pasted_one_is_refused(devcluster):
    result = check_script(PASTED, ALLIANCE_LAB, account=ACCOUNT)
    assert {
        "unknown_option",
        "ignored_directive",
        "memory_over_share",
        "needs_internet",
        "no_account",
    } <= codes(result.notes)
    assert check_script(result.fixed, ALLIANCE_LAB).notes == ()

    refused = devcluster.ssh(f"sbatch --test-only /dev/stdin <<'EOF'\n{PASTED}EOF")
    assert refused.returncode != 0 and "ambiguous" in refused.stderr

    state, output = _run(devcluster, result.fixed, "fixed")
    assert state == SlurmState.COMPLETED, output
    assert "probe says" in output
