"""Jobs in the dev cluster's site partitions get the job environment of the real site emulated.

site-alliance: per-job node-local $SLURM_TMPDIR, $SCRATCH and $PROJECT on shared storage, Lmod's
`module`, virtualenv and a local wheelhouse. site-processing: node-local /processing/<user> as
$SCRATCH, kept between jobs, and no modules. gpu-a100: /localscratch on each node and nothing else.
A job over its --mem is killed. All jobs are submitted at once through the sshd with a plain,
non-login SSH command, as the portal does (the processing one then from a login shell, on
purpose), and followed in sacct together; each test then reads what its job printed.
"""

import re
import shlex
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from jobs.slurm.sacct import parse_sacct, sacct_argv
from jobs.slurm.states import SlurmState

RUNS = "devcluster-sites"  # in the test user's home
RUN_DIR = f"{RUNS}/{uuid.uuid4().hex[:8]}"
NODES = ("a100-1", "a100-2")


@dataclass(frozen=True)
class Probe:
    """A job to submit: how sbatch is called (the script is its last argument) and the script."""

    submit: str
    script: str


PROBES = {
    "alliance_nodes": Probe(
        "sbatch --partition=site-alliance --nodes=2 --ntasks-per-node=1",
        r"""
set -euo pipefail
echo "batch node=$SLURMD_NODENAME"
echo "SLURM_TMPDIR=$SLURM_TMPDIR"
echo "SCRATCH=$SCRATCH"
echo "PROJECT=$PROJECT"
echo "from $SLURMD_NODENAME" >"$SCRATCH/probe-$SLURM_JOB_ID"
echo "from $SLURMD_NODENAME" >"$PROJECT/probe-$SLURM_JOB_ID"
echo staged >"/localscratch/staged-$SLURM_JOB_ID"
srun bash -c 'echo "task node=$SLURMD_NODENAME tmpdir=$SLURM_TMPDIR" \
    "owner=$(stat -c %U:%a "$SLURM_TMPDIR")" \
    "staged=$(test -e /localscratch/staged-$SLURM_JOB_ID && echo yes || echo no)" \
    "shared=$(test -s "$SCRATCH/probe-$SLURM_JOB_ID" && test -s "$PROJECT/probe-$SLURM_JOB_ID" \
        && echo yes || echo no)"'
""",
    ),
    "alliance_modules": Probe(
        "sbatch --partition=site-alliance",
        r"""
set -euo pipefail
echo "virtualenv before module load: $(type -t virtualenv || echo none)"
module load python cuda
echo "CUDA_HOME=$CUDA_HOME"
virtualenv --no-download "$SLURM_TMPDIR/env"
echo portal_probe >"$SLURM_TMPDIR/requirements.txt"
"$SLURM_TMPDIR/env/bin/pip" install --no-index -r "$SLURM_TMPDIR/requirements.txt"
source "$SLURM_TMPDIR/env/bin/activate"
python -c 'import portal_probe; print("probe says", portal_probe.VALUE)'
""",
    ),
    "alliance_missing_module": Probe(
        "sbatch --partition=site-alliance",
        """
set -euo pipefail
module load nosuchmodule
echo "NOT REACHED"
""",
    ),
    # From a login shell, which hands Lmod's `module` and BASH_ENV down to the job, and with a
    # stray SLURM_TMPDIR: the partition still decides.
    "processing": Probe(
        "bash -lc 'SLURM_TMPDIR=/stray exec \"$@\"' - sbatch --partition=site-processing",
        """
set -euo pipefail
echo "node=$SLURMD_NODENAME"
echo "SCRATCH=$SCRATCH"
echo "SLURM_TMPDIR=${SLURM_TMPDIR-unset}"
echo "module: $(type -t module || echo none)"
echo "virtualenv: $(type -t virtualenv || echo none)"
echo "scratch owner=$(stat -c %U:%a "$SCRATCH")"
echo kept >"$SCRATCH/kept-$SLURM_JOB_ID"
python3 -m venv "$SCRATCH/venv-$SLURM_JOB_ID"
"$SCRATCH/venv-$SLURM_JOB_ID/bin/pip" --version >/dev/null && echo "venv works"
rm -rf "$SCRATCH/venv-$SLURM_JOB_ID"
""",
    ),
    "plain": Probe(
        "SLURM_TMPDIR=/stray sbatch --partition=gpu-a100",
        """
set -euo pipefail
echo "SLURM_TMPDIR=${SLURM_TMPDIR-unset} SCRATCH=${SCRATCH-unset} PROJECT=${PROJECT-unset}"
echo "module: $(type -t module || echo none)"
echo "localscratch mode=$(stat -c %a /localscratch)"
echo x >"/localscratch/plain-$SLURM_JOB_ID" && rm "/localscratch/plain-$SLURM_JOB_ID"
echo "localscratch writable"
""",
    ),
    "over_memory": Probe(
        "sbatch --partition=gpu-a100 --mem=100M",
        """
python3 -c 'import time; data = b"x" * (400 << 20); time.sleep(30); print("NOT KILLED")'
""",
    ),
}


@dataclass(frozen=True)
class Ran:
    job_id: int
    state: SlurmState
    exit_code: int | None
    output: str

    def value(self, name: str) -> str:
        """NAME=value from a line the job printed."""
        match = re.search(rf"^{re.escape(name)}=(\S*)", self.output, re.MULTILINE)
        assert match, f"{name}= not in the output:\n{self.output}"
        return match.group(1)


def _submit_all(devcluster) -> dict[str, int]:
    """Writes every probe's script and submits them all in one SSH command."""
    lines = [f"mkdir -p {RUN_DIR}"]
    for name, probe in PROBES.items():
        script = f"{RUN_DIR}/{name}.sh"
        lines.append(f"cat >{script} <<'PROBE_EOF'\n#!/bin/bash\n{probe.script.lstrip()}PROBE_EOF")
        lines.append(
            f'printf "{name}=%s\\n" "$({probe.submit} --parsable --time=5 '
            f'--output={RUN_DIR}/{name}-%j.out {script})"'
        )
    result = devcluster.ssh("\n".join(lines))
    assert result.returncode == 0, result.stderr
    ids = dict(line.split("=", 1) for line in result.stdout.split())
    assert set(ids) == set(PROBES), result.stdout + result.stderr
    return {name: int(job_id.split(";")[0]) for name, job_id in ids.items()}


def _wait_all(devcluster, ids: dict[str, int], timeout: float = 90) -> dict[int, tuple]:
    since = datetime.now(UTC).replace(tzinfo=None) - timedelta(minutes=2)
    sacct = shlex.join(sacct_argv(devcluster.user, since, jobs=ids.values()))
    deadline = time.monotonic() + timeout
    while True:
        result = devcluster.ssh(sacct)
        assert result.returncode == 0, result.stderr
        seen = {job.job_id_raw: job for job in parse_sacct(result.stdout)}
        if all(job_id in seen and seen[job_id].state.is_final for job_id in ids.values()):
            return {
                job_id: (job.state, job.exit_code.code if job.exit_code else None)
                for job_id, job in seen.items()
            }
        assert time.monotonic() < deadline, f"not all ended within {timeout} s: {seen}"
        time.sleep(0.5)


def _outputs(devcluster) -> dict[str, str]:
    result = devcluster.ssh(f"tail -n +1 {RUN_DIR}/*.out")
    assert result.returncode == 0, result.stderr
    outputs = {}
    for block in result.stdout.split("==> ")[1:]:
        header, _, text = block.partition(" <==\n")
        outputs[header.rsplit("/", 1)[-1].rsplit("-", 1)[0]] = text
    return outputs


@pytest.fixture(scope="module")
def ran(devcluster) -> Iterator[dict[str, Ran]]:
    partitions = devcluster.ssh("sinfo --all --noheader --format=%P").stdout.split()
    if "site-alliance" not in partitions:
        pytest.fail("the running dev cluster predates the site partitions: run down, then up")
    try:
        ids = _submit_all(devcluster)
        ended = _wait_all(devcluster, ids)
        outputs = _outputs(devcluster)
        yield {
            name: Ran(job_id, *ended[job_id], outputs.get(name, "")) for name, job_id in ids.items()
        }
    finally:
        devcluster.ssh(f"rm -rf {RUN_DIR} && rmdir --ignore-fail-on-non-empty {RUNS}")


def _exists_on(devcluster, node: str, path: str) -> bool:
    return devcluster.on_node(node, f"test -e {shlex.quote(path)}").returncode == 0


def test_it_gives_alliance_jobs_a_tmpdir_per_job_on_every_node(devcluster, ran):
    job = ran["alliance_nodes"]
    assert job.state == SlurmState.COMPLETED, job.output
    tmpdir = f"/localscratch/portaltest.{job.job_id}.0"
    assert job.value("SLURM_TMPDIR") == tmpdir
    tasks = re.findall(r"^task node=(\S+) tmpdir=(\S+) owner=(\S+)", job.output, re.MULTILINE)
    assert sorted(tasks) == [(node, tmpdir, "portaltest:700") for node in NODES]
    # The Epilog removed it on both nodes.
    assert not any(_exists_on(devcluster, node, tmpdir) for node in NODES)


def test_a_file_staged_on_one_node_is_not_on_another(devcluster, ran):
    job = ran["alliance_nodes"]
    batch_node = job.value("batch node")
    staged = re.findall(r"^task node=(\S+) .* staged=(\S+)", job.output, re.MULTILINE)
    assert dict(staged) == {node: "yes" if node == batch_node else "no" for node in NODES}
    path = f"/localscratch/staged-{job.job_id}"
    try:
        # /localscratch belongs to the node and outlives the job; the login host does not see it.
        assert [_exists_on(devcluster, node, path) for node in NODES] == [
            node == batch_node for node in NODES
        ]
        assert devcluster.ssh(f"test -e {path}").returncode == 1
    finally:
        devcluster.on_node(batch_node, f"rm -f {path}")


def test_alliance_jobs_have_scratch_and_project_on_shared_storage(devcluster, ran):
    job = ran["alliance_nodes"]
    assert job.value("SCRATCH") == "/scratch/portaltest"
    assert job.value("PROJECT") == "/project/portal"
    assert re.findall(r"shared=(\S+)", job.output) == ["yes", "yes"]
    login = devcluster.ssh(
        f"cat /scratch/portaltest/probe-{job.job_id} /project/portal/probe-{job.job_id}"
        f" && rm /scratch/portaltest/probe-{job.job_id} /project/portal/probe-{job.job_id}"
    )
    assert login.stdout.split("\n")[:2] == [f"from {job.value('batch node')}"] * 2, login.stderr


def test_alliance_jobs_load_modules_and_install_from_the_wheelhouse(devcluster, ran):
    job = ran["alliance_modules"]
    assert job.state == SlurmState.COMPLETED, job.output
    assert "virtualenv before module load: none" in job.output
    assert job.value("CUDA_HOME") == f"{devcluster.lab}/site/alliance/software/cuda/12.2"
    assert "Successfully installed portal_probe-1.0" in job.output
    assert "probe says portal-probe-ok" in job.output


def test_an_unknown_module_stops_a_set_e_script(ran):
    job = ran["alliance_missing_module"]
    assert (job.state, job.exit_code) == (SlurmState.FAILED, 1), job.output
    assert 'The following module(s) are unknown:\n"nosuchmodule"' in job.output
    assert "NOT REACHED" not in job.output


def test_processing_jobs_have_a_kept_node_local_scratch_and_no_modules(devcluster, ran):
    job = ran["processing"]
    assert job.state == SlurmState.COMPLETED, job.output
    assert job.value("SCRATCH") == "/processing/portaltest"
    assert job.value("SLURM_TMPDIR") == "unset"
    assert "module: none" in job.output and "virtualenv: none" in job.output
    assert job.value("scratch owner") == "portaltest:700"
    assert "venv works" in job.output
    node = job.value("node")
    kept = f"/processing/portaltest/kept-{job.job_id}"
    try:
        assert [_exists_on(devcluster, other, kept) for other in NODES] == [
            other == node for other in NODES
        ]
        assert devcluster.ssh(f"test -e {kept}").returncode == 1
    finally:
        devcluster.on_node(node, f"rm -f {kept}")


def test_the_clusters_own_partitions_have_localscratch_and_nothing_else(ran):
    job = ran["plain"]
    assert job.state == SlurmState.COMPLETED, job.output
    assert "SLURM_TMPDIR=unset SCRATCH=unset PROJECT=unset" in job.output
    assert "module: none" in job.output
    assert "localscratch mode=1777" in job.output and "localscratch writable" in job.output


def test_a_job_over_its_memory_is_killed(devcluster, ran):
    job = ran["over_memory"]
    assert not re.search("^NOT KILLED$", job.output, re.MULTILINE), job.output
    if "TaskPlugin=task/cgroup" in (devcluster.lab / "etc" / "slurm.conf").read_text():
        assert job.state == SlurmState.OUT_OF_MEMORY, job.output
    else:
        # No memory cgroup here: Slurm's polling (OverMemoryKill) cancels the step.
        assert job.state == SlurmState.FAILED, job.output
        assert "exceeded memory limit" in job.output
