"""GPU monitoring inside real Slurm jobs on the dev cluster, with the fake NVML.

The jobs are scripts rendered by jobs/compose/script.py, filled in by with_monitoring() as the
portal does when it submits, and run as the test user (who cannot read /work: the fake NVML is
copied to its home and named in the job's environment, before the monitoring block). The last test
goes through the portal itself: its Celery tasks submit and poll over the real sshd, and the job
page shows what the sampler wrote. The time-limit test waits for Slurm to end a job of one minute:
about 90 s.
"""

import io
import json
import re
import shlex
import time
import uuid
from pathlib import Path

import pytest
from django.core.management import call_command

from guidance.engine import Placement
from jobs import tasks
from jobs.compose.script import render
from jobs.compose.script_spec import ScriptSpec
from jobs.gpu.monitoring import with_monitoring
from jobs.models import ClusterAccount, GpuDevice, Job, JobState, SampleFile
from jobs.script_markers import MONITORING_START
from tests.cluster_routes import ROUTES, take_route

FAKE_NVML = Path(__file__).resolve().parent / "fake_nvml" / "pynvml.py"
FAKE_HOME_DIR = "portal-test-fake-nvml"  # in the test user's home
GPU0 = "GPU-00000000-0000-0000-0000-000000000000"


@pytest.fixture(scope="module")
def cluster(devcluster):
    source = FAKE_NVML.read_text()
    assert "\nFAKE_NVML_EOF\n" not in source
    copy = f"mkdir -p {FAKE_HOME_DIR} && cat > {FAKE_HOME_DIR}/pynvml.py <<'FAKE_NVML_EOF'\n"
    result = devcluster.ssh(f"{copy}{source}FAKE_NVML_EOF\n")
    assert result.returncode == 0, result.stderr
    return devcluster


def _composed(
    name: str, command: str, nodes: int = 1, time_limit: str = "00:03:00", array: str = ""
) -> str:
    """A script as the composer renders it, told to use the fake NVML with GPUs 30% and 0% busy."""
    spec = ScriptSpec(
        array=array,
        chain=bool(array),
        cluster="portallab",
        job_name=name,
        partition="gpu-a100",
        gpu_type="a100",
        gpus_per_node=2,
        nodes=nodes,
        cpus_per_task=1,
        mem="1000M",
        time=time_limit,
        command=command,
        placement=Placement.SHARED,
        data_source="$HOME",
        results_dest=f"$HOME/portal-jobs/{name}/results",
    )
    fake = (
        f'export PYTHONPATH="$HOME/{FAKE_HOME_DIR}" PORTAL_SAMPLER_NVML=pynvml'
        " FAKE_NVML_UTILIZATION=30,0"
    )
    return render(spec).replace(MONITORING_START, f"{fake}\n{MONITORING_START}")


def _script(name: str, command: str, nodes: int = 1, time_limit: str = "00:03:00") -> str:
    text = _composed(name, command, nodes, time_limit)
    monitored = with_monitoring(text, f"portal-jobs/{name}", interval=1)
    assert monitored != text
    return monitored


def _submit(cluster, script: str, name: str) -> str:
    path = f"portal-jobs/{name}/job.sbatch"
    assert "\nJOB_SCRIPT_EOF\n" not in script
    result = cluster.ssh(
        f"mkdir -p portal-jobs/{name} && cat > {path} <<'JOB_SCRIPT_EOF'\n{script}JOB_SCRIPT_EOF\n"
        f"sbatch --parsable {path}"
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().split(";")[0]


def _lines(cluster, name: str, job_id: str) -> dict[str, list[dict]]:
    """Every node's file, parsed; a JSON error fails the test."""
    files = cluster.ssh(f"cd portal-jobs/{name} && ls gpu-{job_id}.*.jsonl 2>/dev/null || true")
    found = {}
    for file in files.stdout.split():
        text = cluster.ssh(f"cat portal-jobs/{name}/{shlex.quote(file)}").stdout
        complete = text[: text.rfind("\n") + 1]
        found[file] = [json.loads(line) for line in complete.splitlines()]
    return found


def _wait_for(cluster, name: str, job_id: str, done, timeout: float) -> dict[str, list[dict]]:
    deadline = time.monotonic() + timeout
    while True:
        found = _lines(cluster, name, job_id)
        if found and done(found):
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"not there within {timeout} s: {found}")
        time.sleep(1)


def _count(records: list[dict], kind: str) -> int:
    return sum(r["type"] == kind for r in records)


def _summarized(found: dict[str, list[dict]]) -> bool:
    return all(
        [r["type"] for r in records][-2:] == ["summary", "summary"] for records in found.values()
    )


def _sacct(cluster, job_id: str, timeout: float = 60) -> tuple[str, str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = cluster.ssh(f"sacct -X -n -P -j {job_id} -o State,ExitCode")
        state, _, code = result.stdout.strip().partition("|")
        if state and state not in ("PENDING", "RUNNING", "COMPLETING"):
            return state.split()[0], code
        time.sleep(1)
    raise AssertionError(f"job {job_id} still not finished in sacct")


def _name() -> str:
    return f"mon-{uuid.uuid4().hex[:8]}"


def test_samples_arrive_while_it_runs_and_a_cancel_leaves_summaries(cluster):
    name = _name()
    job_id = _submit(cluster, _script(name, "sleep 300", nodes=2), name)
    found = _wait_for(
        cluster,
        name,
        job_id,
        lambda f: (
            len(f) == 2 and all(sum(r["type"] == "sample" for r in v) >= 4 for v in f.values())
        ),
        timeout=60,
    )
    assert sorted(found) == [f"gpu-{job_id}.a100-1.jsonl", f"gpu-{job_id}.a100-2.jsonl"]
    for records in found.values():
        samples = [r for r in records if r["type"] == "sample"]
        assert {r["utilization"] for r in samples if r["uuid"] == GPU0} == {30}
        assert not any(r["type"] == "summary" for r in records)  # still running

    cancelled = time.monotonic()
    assert cluster.ssh(f"scancel {job_id}").returncode == 0
    found = _wait_for(cluster, name, job_id, _summarized, timeout=15)
    assert time.monotonic() - cancelled < 15
    for records in found.values():
        summaries = [r for r in records if r["type"] == "summary"]
        assert {s["stopped_by"] for s in summaries} <= {"SIGTERM", "SIGINT"}
        assert {s["mean_utilization"] for s in summaries} == {30, 0}
    assert _sacct(cluster, job_id)[0] == "CANCELLED"


def test_a_job_that_exits_0_is_completed_0_and_its_sampler_stops(cluster):
    name = _name()
    job_id = _submit(cluster, _script(name, "sleep 4; echo done"), name)
    assert _sacct(cluster, job_id) == ("COMPLETED", "0:0")
    found = _wait_for(cluster, name, job_id, _summarized, timeout=15)
    [records] = found.values()
    assert records[-1]["stopped_by"] == "SIGINT"  # the exit trap, through srun
    assert _count(records, "sample") >= 4
    output = cluster.ssh(
        f"cat portal-jobs/{name}/slurm-{job_id}.out portal-jobs/{name}/slurm-{job_id}.err"
    )
    assert output.stdout == "done\n"  # srun's messages went to the sampler's log


def test_a_job_that_fails_keeps_its_exit_code(cluster):
    name = _name()
    job_id = _submit(cluster, _script(name, "sleep 2; exit 3"), name)
    assert _sacct(cluster, job_id) == ("FAILED", "3:0")
    assert _wait_for(cluster, name, job_id, _summarized, timeout=15)


def test_a_job_over_its_time_limit_leaves_summaries(cluster):
    # Slow (about 90 s): Slurm checks time limits every 30 s, then KillWait is 5 s.
    name = _name()
    job_id = _submit(cluster, _script(name, "sleep 600", time_limit="1"), name)
    found = _wait_for(cluster, name, job_id, _summarized, timeout=150)
    for records in found.values():
        assert {r["stopped_by"] for r in records if r["type"] == "summary"} <= {"SIGTERM", "SIGINT"}
        assert _count(records, "sample") >= 40
    assert _sacct(cluster, job_id)[0] == "TIMEOUT"


@pytest.fixture(params=ROUTES)
def account(request, cluster, seeded, user) -> ClusterAccount:
    """The lab user's login, or the same through the automation node (the wrapper, no SFTP)."""
    call_command("register_devcluster", user.username, stdout=io.StringIO())
    account = ClusterAccount.objects.get(owner=user, cluster__slug="local")
    return take_route(account, request.param)


def poll_until(job: Job, done, timeout: float) -> Job:
    deadline = time.monotonic() + timeout
    while True:
        tasks.poll_clusters.apply()
        job.refresh_from_db()
        if done(job):
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"not there within {timeout} s: {job.state}, {job.gpu_warning!r}")
        time.sleep(0.5)


def test_the_portal_submits_with_monitoring_and_the_job_page_shows_the_gpus(
    account, user_client, settings
):
    settings.SAMPLE_SECONDS = 1
    settings.GPU_WARMUP_SECONDS = 3
    name = _name()
    composed = _composed(name, "sleep 14")
    job = Job.objects.create(owner=account.owner, account=account, name=name, script=composed)
    tasks.submit_job.apply(args=[job.pk])
    job.refresh_from_db()
    assert job.slurm_id and job.script == composed  # the job keeps what its owner composed

    running = poll_until(job, lambda j: j.state == JobState.RUNNING and j.gpu_warning, 40)
    page = user_client.get(f"/jobs/{running.pk}/").content.decode()
    svg = re.search(r'<svg class="gpu-chart".*?</svg>', page, re.S).group(0)
    assert svg.count('class="gpu-series"') == 2
    node = running.nodes
    assert f"GPU 0 on {node}: 30% busy on average" in svg
    assert f"GPU 1 on {node}: 0% busy on average" in svg
    assert f"GPU 1 on {node} has done nothing for under a minute" in page
    assert "Your 2 GPUs are 15% busy on average; the cluster asks for more than 90%." in page
    assert "Ask for 1 GPU instead of 2" in page
    assert "Efficiency report" not in page
    assert "Slurm got this script with the portal's GPU sampler added" in page

    ended = poll_until(
        job,
        lambda j: j.is_final and not j.sample_files.filter(finished=False).exists(),
        60,
    )
    assert ended.state == JobState.COMPLETED and ended.exit_code == 0
    assert SampleFile.objects.get(job=ended).path == (
        f"portal-jobs/{name}/gpu-{ended.slurm_id}.{node}.jsonl"
    )
    page = user_client.get(f"/jobs/{ended.pk}/").content.decode()
    assert "Efficiency report" in page
    assert "15% on average" in page
    assert f"GPU 0 on {node}: 30%; GPU 1 on {node}: 0%." in page
    assert "Under the 90% target 100% of the sampled time." in page
    assert "1 GPU instead of 2" in page
    # The fake NVML's energy counter grows at its fake power draw, 150 W and 60 W: each sample's
    # joules come through the poll to the GPUs, the job and its page.
    energy = dict(GpuDevice.objects.filter(job=ended).values_list("index", "energy_j"))
    assert energy[0] == pytest.approx(2.5 * energy[1], rel=0.1)
    assert ended.gpu_energy_j == pytest.approx(energy[0] + energy[1])
    assert '<tr class="gpu-energy">' in page and "kWh" in page


def test_each_part_of_a_chain_is_sampled_and_shown(account, user_client, settings):
    settings.SAMPLE_SECONDS = 1
    name = _name()
    script = _composed(name, "sleep 3", array="1-2%1")
    job = Job.objects.create(owner=account.owner, account=account, name=name, script=script)
    tasks.submit_job.apply(args=[job.pk])
    job.refresh_from_db()
    ended = poll_until(
        job,
        lambda j: j.is_final and not j.sample_files.filter(finished=False).exists(),
        90,
    )
    assert ended.state == JobState.COMPLETED
    files = sorted(ended.sample_files.values_list("task_id", "finished"))
    assert files == [("1", True), ("2", True)]
    parts = {(d.task_id, d.index) for d in ended.gpu_devices.all()}
    assert parts == {("1", 0), ("1", 1), ("2", 0), ("2", 1)}
    page = user_client.get(f"/jobs/{ended.pk}/").content.decode()
    assert "(part 1)" in page and "(part 2)" in page
