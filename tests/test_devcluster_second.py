"""The second dev cluster (`devcluster up --second`) beside the first: both up at once, each sshd
talking to its own Slurm, with accounting of its own."""

import shlex
import time
from datetime import datetime, timedelta

from jobs.slurm.sacct import parse_sacct, sacct_argv
from jobs.slurm.sbatch import parse_sbatch
from jobs.slurm.states import SlurmState


def _partitions(cluster) -> set[str]:
    sinfo = cluster.ssh("sinfo --noheader --format=%P")
    assert sinfo.returncode == 0, sinfo.stderr
    return set(sinfo.stdout.split())


def test_each_sshd_talks_to_its_own_cluster(devcluster, second_devcluster):
    assert (devcluster.name, second_devcluster.name) == ("portallab", "otherlab")
    assert second_devcluster.port != devcluster.port
    assert _partitions(devcluster) == {"gpu-a100*", "gpu-rtx"}
    assert _partitions(second_devcluster) == {"gpu-h100*", "gpu-l40s"}
    gres = second_devcluster.ssh("sinfo --noheader --Node --format='%N %G %c %m %l'").stdout
    assert sorted(gres.splitlines()) == [
        "h100-1 gpu:h100:4 8 16000 2:00:00",
        "l40s-1 gpu:l40s:2 4 8000 4:00:00",
    ]


def test_a_job_on_the_second_is_in_its_accounting_and_not_the_firsts(devcluster, second_devcluster):
    since = datetime.now() - timedelta(minutes=1)
    submitted = second_devcluster.ssh(
        "sbatch --parsable --output=/dev/null --wrap 'test -d /localscratch'"
    )
    assert submitted.returncode == 0, submitted.stderr
    job_id = parse_sbatch(submitted.stdout).job_id
    assert int(job_id) >= 5_000_000  # far from the first's ids: an id names one job here

    sacct = shlex.join(sacct_argv(second_devcluster.user, since, jobs=[job_id]))
    deadline = time.monotonic() + 30
    rows = []
    while time.monotonic() < deadline:
        rows = parse_sacct(second_devcluster.ssh(sacct).stdout)
        if [row.state for row in rows] == [SlurmState.COMPLETED]:
            break
        time.sleep(0.5)
    assert [(row.state, row.nodes) for row in rows] == [(SlurmState.COMPLETED, ["h100-1"])], rows

    first = devcluster.ssh(sacct)
    assert first.returncode == 0, first.stderr
    assert parse_sacct(first.stdout) == []
