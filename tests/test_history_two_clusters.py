"""Every job of the user's from two real clusters' accounting: a job run with sbatch in a
terminal on each dev cluster (the first, "local", and the second, "local-b") shows after one poll
in the jobs list under its own cluster, read from that cluster's own sacct.

Other sessions share the clusters' test user: the test looks for its own jobs by id.
"""

import io
import re

import pytest
from django.core.management import call_command

from jobs import tasks
from jobs.models import ClusterAccount, Job, JobOrigin
from tests.test_accounting_history import _sbatch_in_a_terminal

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("reads_history")]


def test_a_terminal_job_on_each_cluster_is_listed_under_its_own(
    user_client, user, devcluster, second_devcluster, seeded
):
    call_command("register_devcluster", user.username, stdout=io.StringIO())
    call_command("register_devcluster", user.username, "--second", stdout=io.StringIO())
    submitted = {}
    for slug, gpu_type in (("local", "a100"), ("local-b", "l40s")):
        account = ClusterAccount.objects.get(owner=user, cluster__slug=slug)
        submitted[slug] = _sbatch_in_a_terminal(
            account,
            f"--job-name=terminal-{slug}",
            f"--partition=gpu-{gpu_type}",
            f"--gres=gpu:{gpu_type}:1",
            "--output=/dev/null",
            "--wrap",
            "sleep 1",
        )
    assert submitted["local"] != submitted["local-b"]

    tasks.poll_clusters()  # one cycle: the logins have no portal job at all
    listed = user_client.get("/jobs/").content.decode()
    for slug, slurm_id in submitted.items():
        job = Job.objects.get(owner=user, slurm_id=slurm_id)
        assert (job.account.cluster.slug, job.origin) == (slug, JobOrigin.OUTSIDE)
        assert job.name == f"terminal-{slug}"
        row = _row_of(listed, job)
        assert job.account.cluster.name in row, row


def _row_of(page: str, job: Job) -> str:
    start = page.index(f'href="{job.get_absolute_url()}"')
    return re.sub(r"<[^>]+>", " ", page[page.rindex("<tr", 0, start) : page.index("</tr>", start)])
