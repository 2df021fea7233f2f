"""The dev cluster answers like a real one over its sshd: partitions, a job, its accounting."""

import shlex
import time
from datetime import datetime, timedelta

from jobs.slurm.sacct import parse_sacct, sacct_argv
from jobs.slurm.sbatch import parse_sbatch
from jobs.slurm.states import SlurmState


def test_it_runs_a_job_over_ssh(devcluster):
    sinfo = devcluster.ssh("sinfo --noheader --format=%P")
    assert sinfo.returncode == 0, sinfo.stderr
    assert set(sinfo.stdout.split()) == {"gpu-a100*", "gpu-rtx"}

    since = datetime.now() - timedelta(minutes=1)
    submitted = devcluster.ssh('sbatch --parsable --wrap "sleep 1"')
    assert submitted.returncode == 0, submitted.stderr
    job_id = parse_sbatch(submitted.stdout).job_id

    sacct = shlex.join(sacct_argv(devcluster.user, since, jobs=[job_id]))
    deadline = time.monotonic() + 30
    states = []
    while time.monotonic() < deadline:
        result = devcluster.ssh(sacct)
        assert result.returncode == 0, result.stderr
        states = [job.state for job in parse_sacct(result.stdout)]
        if states == [SlurmState.COMPLETED]:
            return
        time.sleep(0.5)
    raise AssertionError(f"job {job_id} was not COMPLETED in sacct within 30 s: {states}")
