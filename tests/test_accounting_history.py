"""Every job of the user's, from Slurm's accounting, on the real dev cluster: a job submitted with
sbatch in a terminal (over the user's own login, as a terminal would) shows in the portal after one
poll, marked as such, with its efficiency once it ended, and in the admins' usage view. The read is
incremental, and a portal job is never listed twice.

Other sessions share the cluster's test user: the tests look for their own jobs by id.
"""

import re
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone

from jobs import tasks
from jobs.cluster import history, remote
from jobs.cluster.gateway import gateway
from jobs.models import ClusterAccount, Job, JobOrigin, JobState
from jobs.slurm.sacct import parse_sacct, sacct_argv

pytestmark = pytest.mark.usefixtures("reads_history")


class RecordedCommands:
    """Keeps the argv of each command the gateway runs (as bench/cluster_setup.py counts them)."""

    def __init__(self):
        self.argvs: list[list[str]] = []
        self._run = gateway.run

    def __enter__(self):
        def run(login, argv, *args, **kwargs):
            self.argvs.append(list(argv))
            return self._run(login, argv, *args, **kwargs)

        gateway.run = run
        return self

    def __exit__(self, *exc):
        gateway.run = self._run

    def history_reads(self) -> list[list[str]]:
        """The sacct commands that name no job: the history reads."""
        return [
            argv
            for argv in self.argvs
            if "sacct" in argv and not any(arg.startswith("--jobs") for arg in argv)
        ]


def _sbatch_in_a_terminal(account: ClusterAccount, *options: str) -> str:
    """sbatch over the user's own login; returns once accounting lists the job in a time window.
    sacct's windows hold a job only once it has started (22.05, measured here: never while it
    pends), and slurmdbd has it a moment later; beat's next poll comes up to POLL_SECONDS after
    the user's sbatch, not at once."""
    login = remote.login_for(account)
    result = gateway.run(login, ["sbatch", "--parsable", *options])
    assert result.exit_status == 0, result.stderr
    slurm_id = result.stdout.strip().split(";")[0]
    window = sacct_argv(
        account.username, datetime.now(UTC).replace(tzinfo=None) - timedelta(hours=1)
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        listed = parse_sacct(gateway.run(login, window).stdout)
        if any(str(row.job_id.job_id) == slurm_id for row in listed):
            return slurm_id
        time.sleep(0.5)
    raise AssertionError(f"accounting did not list job {slurm_id} within 60 s")


def _poll_until_final(job: Job, timeout: float = 60) -> Job:
    deadline = time.monotonic() + timeout
    while not job.is_final and time.monotonic() < deadline:
        time.sleep(1)
        tasks.poll_clusters()
        job.refresh_from_db()
    return job


def _starttime(argv: list[str]) -> datetime:
    [value] = [arg.split("=", 1)[1] for arg in argv if arg.startswith("--starttime=")]
    return datetime.fromisoformat(value).replace(tzinfo=UTC)


# Busy for a few seconds with 200 MB held: CPU and memory efficiency that are not zero. Slurm
# samples a step's memory every 30 s by default: --acctg-freq makes it every second.
WORK = (
    "python3 -c 'import time; x = bytearray(200 * 2**20); t = time.time()\n"
    "while time.time() - t < 4: pass'"
)


def test_a_job_from_a_terminal_shows_after_one_poll_with_its_efficiency(
    local_login, user_client, staff
):
    slurm_id = _sbatch_in_a_terminal(
        local_login,
        "--job-name=from-terminal",
        "--gres=gpu:a100:1",
        "--mem=600M",
        "--time=00:02:00",
        "--acctg-freq=task=1",
        "--wrap",
        WORK,
    )
    tasks.poll_clusters()  # one cycle: the login has no portal job at all
    job = Job.objects.get(account=local_login, slurm_id=slurm_id)
    assert (job.origin, job.name, job.script) == (JobOrigin.OUTSIDE, "from-terminal", "")
    assert job.work_dir.startswith("/")
    listed = user_client.get("/jobs/").content.decode()
    assert "from-terminal" in listed and "Submitted outside the portal" in listed

    job = _poll_until_final(job)
    assert job.state == JobState.COMPLETED, job.state
    assert (job.gpus, job.gpu_type, job.requested_memory_mb) == (1, "a100", 600)
    assert job.cpu_seconds and job.max_rss_mb and job.elapsed_seconds is not None
    row = re.sub(r"<[^>]+>", "", _row_of(user_client.get("/jobs/").content.decode(), job))
    assert "Completed" in row and "of 0:02:00" in row  # elapsed against the time asked for
    assert "% CPU" in row and "% memory" in row and "GPU-hours" in row

    page = user_client.get(job.get_absolute_url()).content.decode()
    assert "Efficiency report" in page and "CPU efficiency" in page and "Memory efficiency" in page
    assert "submitted outside the portal" in page and job.work_dir in page
    assert "<h2>Script</h2>" not in page  # none to show
    assert "Show the end of stdout" not in page  # sacct does not say where it wrote it

    admin = Client()
    admin.force_login(staff)
    usage = admin.get("/jobs/usage/", {"cluster": "local"}).content.decode()
    assert "alice" in usage
    outside_gpu_jobs = Job.objects.filter(origin=JobOrigin.OUTSIDE, gpus__gt=0).count()
    counted = re.search(r"\((\d+) of them submitted outside the portal\)", usage)
    assert counted and 1 <= int(counted[1]) <= outside_gpu_jobs


def _row_of(page: str, job: Job) -> str:
    start = page.index(f'href="{job.get_absolute_url()}"')
    return page[start : page.index("</tr>", start)]


def test_the_second_read_asks_only_for_what_happened_since_the_first(local_login, settings):
    settings.HISTORY_READ_SECONDS = 1
    with RecordedCommands() as commands:
        began = timezone.now()
        tasks.poll_clusters()
        [first] = commands.history_reads()
        back = timedelta(days=settings.HISTORY_DAYS)
        assert abs(_starttime(first) - (began - back)) < timedelta(minutes=1)

        local_login.refresh_from_db()
        read_until = local_login.history_read_until
        assert read_until is not None
        tasks.poll_clusters()  # within HISTORY_READ_SECONDS: not read again
        assert len(commands.history_reads()) == 1

        time.sleep(1.1)
        tasks.poll_clusters()
        [_, second] = commands.history_reads()
    assert _starttime(second) == (read_until - history.MARGIN).replace(microsecond=0)


def test_a_portal_job_is_never_listed_twice(local_login, settings):
    settings.HISTORY_READ_SECONDS = 1
    job = Job.objects.create(
        owner=local_login.owner,
        account=local_login,
        name="portal-own",
        script="#!/bin/bash\n#SBATCH --time=00:02:00\n#SBATCH --output=portal-jobs/portal-own/"
        "slurm-%j.out\nsleep 2\n",
    )
    tasks.submit_job.apply(args=[job.pk])
    job.refresh_from_db()
    assert job.slurm_id
    for _ in range(3):
        tasks.poll_clusters()
        time.sleep(1.1)
    job = _poll_until_final(job)
    tasks.poll_clusters()
    same_id = Job.objects.filter(account=local_login, slurm_id=job.slurm_id)
    assert [(j.pk, j.origin) for j in same_id] == [(job.pk, JobOrigin.PORTAL)]
    assert job.state == JobState.COMPLETED


def test_an_array_from_a_terminal_is_one_job_with_its_parts(local_login, user_client):
    slurm_id = _sbatch_in_a_terminal(
        local_login, "--job-name=terminal-array", "--array=1-2", "--wrap", "true"
    )
    tasks.poll_clusters()
    job = _poll_until_final(Job.objects.get(account=local_login, slurm_id=slurm_id))
    assert job.origin == JobOrigin.OUTSIDE
    assert sorted(t.task_id for t in job.tasks.all()) == ["1", "2"]
    assert Job.objects.filter(account=local_login, slurm_id__startswith=f"{slurm_id}_").count() == 0


def test_a_job_waiting_after_sbatch_in_a_terminal_shows_after_one_poll(local_login, user_client):
    login = remote.login_for(local_login)
    said = gateway.run(login, ["sbatch", "--parsable", "--hold", "--job-name=held-by-hand",
                               "--wrap", "true"])  # fmt: skip
    slurm_id = said.stdout.strip().split(";")[0]
    try:
        tasks.poll_clusters()  # accounting's window has no waiting job: the queue does
        job = Job.objects.get(account=local_login, slurm_id=slurm_id)
        assert (job.origin, job.state, job.reason) == (
            JobOrigin.OUTSIDE, JobState.PENDING, "JobHeldUser"
        )  # fmt: skip
        page = user_client.get("/jobs/").content.decode()
        assert "held-by-hand" in page and "scontrol release" in page
    finally:
        gateway.run(login, ["scancel", slurm_id])
