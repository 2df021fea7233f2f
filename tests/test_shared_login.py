"""One reading per cluster login (jobs.cluster.login_group), on the real dev cluster: portal users
who register the same Unix user (a lab's shared account; here the dev cluster's test user) are
polled with one squeue and one sacct, and their history read once, per cycle, whatever their
number; each Slurm job is one row; each user sees their own jobs and, marked, the others of the
login, and acts only on their own.

Other sessions share the cluster's test user: the tests look for their own jobs by id.
"""

import io
import uuid

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from jobs import tasks
from jobs.cluster import reader_poll, remote
from jobs.cluster.gateway import gateway
from jobs.models import ClusterAccount, Job, JobOrigin, JobState
from portal.models import ApiToken

pytestmark = pytest.mark.usefixtures("reads_history")

SHARERS = 20
HELD = "#!/bin/bash\n#SBATCH --hold\n#SBATCH --time=00:02:00\ntrue\n"


class SlurmCommands:
    """The argv of each command the gateway runs, by kind (as tests/test_accounting_history.py)."""

    def __init__(self) -> None:
        self.argvs: list[list[str]] = []
        self._run = gateway.run

    def __enter__(self) -> "SlurmCommands":
        def run(login, argv, *args, **kwargs):
            self.argvs.append(list(argv))
            return self._run(login, argv, *args, **kwargs)

        gateway.run = run
        return self

    def __exit__(self, *exc) -> None:
        gateway.run = self._run

    def sacct(self, *, by_id: bool) -> list[list[str]]:
        """sacct of jobs by id (a poll's), or of a window (a history read's)."""
        return [
            argv
            for argv in self.argvs
            if "sacct" in argv and any(a.startswith("--jobs") for a in argv) == by_id
        ]

    def squeue_of_user(self) -> list[list[str]]:
        return [argv for argv in self.argvs if "squeue" in argv and _names_user(argv)]


def _names_user(argv: list[str]) -> bool:
    return any(arg.startswith("--user=") for arg in argv)


@pytest.fixture
def sharers(devcluster, seeded, django_user_model) -> list[ClusterAccount]:
    """SHARERS portal users, each with a login of their own key as the same Unix user."""
    names = [f"lab{i:02d}-{uuid.uuid4().hex[:6]}" for i in range(SHARERS)]
    for name in names:
        django_user_model.objects.create_user(name, password="lab-password")
    call_command("register_devcluster", *names, stdout=io.StringIO())
    accounts = ClusterAccount.objects.filter(owner__username__in=names).select_related("cluster")
    accounts = list(accounts.order_by("pk"))
    assert len({(a.cluster_id, a.username) for a in accounts}) == 1  # one login, shared
    return accounts


@pytest.fixture
def slurm_jobs(devcluster):
    made: list[str] = []
    yield made
    if made:
        devcluster.as_operator("scancel", *made)


def _submitted(account: ClusterAccount, slurm_jobs: list[str]) -> Job:
    """A held portal job of the account's owner, submitted as the portal does (its tag)."""
    job = Job.objects.create(
        owner=account.owner, account=account, name=f"s-{uuid.uuid4().hex[:8]}", script=HELD
    )
    tasks.submit_job.apply(args=[job.pk])
    job.refresh_from_db()
    assert job.slurm_id, job.message
    slurm_jobs.append(job.slurm_id)
    return job


def _sbatch_in_a_terminal(account: ClusterAccount, slurm_jobs: list[str]) -> str:
    result = gateway.run(
        remote.login_for(account),
        ["sbatch", "--parsable", "--hold", "--job-name=lab-terminal", "--wrap", "true"],
    )
    assert result.exit_status == 0, result.stderr
    slurm_id = result.stdout.strip().split(";")[0]
    slurm_jobs.append(slurm_id)
    return slurm_id


def _client(account: ClusterAccount) -> Client:
    client = Client()
    client.force_login(account.owner)
    return client


def _row_of(page: str, job: Job) -> str:
    start = page.index(f'href="{job.get_absolute_url()}"')
    return page[start : page.index("</tr>", start)]


@pytest.mark.django_db(transaction=True)
def test_twenty_sharers_make_one_poll_one_history_read_and_one_row_per_job(
    sharers: list[ClusterAccount], slurm_jobs: list[str]
) -> None:
    theirs = [_submitted(account, slurm_jobs) for account in sharers[:3]]
    outside = _sbatch_in_a_terminal(sharers[5], slurm_jobs)

    with SlurmCommands() as first:
        tasks.poll_clusters()
    # One history read (sacct of a window and squeue of the waiting jobs) for the login; one
    # poll of the active jobs of all its users, and one more of the jobs that read found.
    print(f"first cycle: {len(first.argvs)} commands")
    assert len(first.sacct(by_id=False)) == 1
    assert len(first.sacct(by_id=True)) == 2
    assert len(first.squeue_of_user()) == 3
    with SlurmCommands() as second:
        tasks.poll_clusters()
    print(f"second cycle: {len(second.argvs)} commands")
    assert (len(second.sacct(by_id=False)), len(second.sacct(by_id=True))) == (0, 1)
    assert len(second.squeue_of_user()) == 1

    ids = [job.slurm_id for job in theirs] + [outside]
    rows = Job.objects.filter(account__cluster=sharers[0].cluster, slurm_id__in=ids)
    assert sorted(rows.values_list("slurm_id", flat=True)) == sorted(ids)  # each once
    found = rows.get(slurm_id=outside)
    # Under the group's poller (the oldest login: none was tested), followed like the others.
    assert (found.origin, found.account_id) == (JobOrigin.OUTSIDE, sharers[0].pk)
    assert found.state == JobState.PENDING
    for job in theirs:
        job.refresh_from_db()
        assert (job.origin, job.state) == (JobOrigin.PORTAL, JobState.PENDING)
        assert job.polled is not None

    # Each user: their own job unmarked, the others' marked, the outside one marked.
    for account, own in zip(sharers[:3], theirs, strict=True):
        page = _client(account).get("/jobs/").content.decode()
        assert "not submitted by you" not in _row_of(page, own)
        for other in theirs:
            if other != own:
                assert "not submitted by you" in _row_of(page, other)
    page = _client(sharers[9]).get("/jobs/").content.decode()
    assert all("not submitted by you" in _row_of(page, job) for job in theirs)
    assert "followed under another portal user" in _row_of(page, found)


@pytest.mark.django_db(transaction=True)
def test_a_sharer_sees_anothers_job_marked_and_cannot_act_on_it(
    sharers: list[ClusterAccount], slurm_jobs: list[str]
) -> None:
    submitter, other = sharers[0], sharers[1]
    job = _submitted(submitter, slurm_jobs)
    tasks.poll_clusters()  # the history read sees the portal's tag: no second row
    same = Job.objects.filter(account__cluster=submitter.cluster, slurm_id=job.slurm_id)
    assert same.count() == 1
    job.refresh_from_db()
    assert job.origin == JobOrigin.PORTAL

    own_page = _client(submitter).get(job.get_absolute_url()).content.decode()
    assert "Cancel the job" in own_page and "not submitted by you" not in own_page
    assert "<h2>Script</h2>" in own_page

    client = _client(other)
    page = client.get(job.get_absolute_url()).content.decode()
    assert "not submitted by you" in page and job.slurm_id in page
    assert "Cancel the job" not in page and "<h2>Script</h2>" not in page
    assert client.post(f"/jobs/{job.pk}/cancel/").status_code == 403
    assert client.get(f"/jobs/{job.pk}/output/").status_code == 403
    assert client.get(f"/jobs/{job.pk}/notifications/").status_code == 404
    assert client.post(f"/jobs/{job.pk}/next-run/").status_code == 403

    secret = ApiToken.issue(other.owner, "laptop")[1]
    api = Client(headers={"Authorization": f"Bearer {secret}"})
    listed = {row["id"]: row for row in api.get("/api/v1/jobs").json()["items"]}
    assert listed[job.pk]["mine"] is False
    assert api.get(f"/api/v1/jobs/{job.pk}").json()["mine"] is False
    assert api.post(f"/api/v1/jobs/{job.pk}/cancel").status_code == 403
    tasks.poll_clusters()
    job.refresh_from_db()
    assert job.state == JobState.PENDING  # not cancelled


@pytest.mark.django_db(transaction=True)
def test_the_cluster_reader_reads_a_shared_login_once(
    sharers: list[ClusterAccount], slurm_jobs: list[str]
) -> None:
    call_command("register_devcluster", sharers[0].owner.username, "--reader", stdout=io.StringIO())
    outside = _sbatch_in_a_terminal(sharers[3], slurm_jobs)
    read = reader_poll.poll_cluster(sharers[0].cluster, sharers, timezone.now())
    assert read == [sharers[0]]  # one per login group
    found = Job.objects.get(account__cluster=sharers[0].cluster, slurm_id=outside)
    assert (found.origin, found.account_id) == (JobOrigin.OUTSIDE, sharers[0].pk)
    # The window moved on for the whole group: no member's history is due again.
    assert not ClusterAccount.objects.filter(history_read_until=None).exists()


@pytest.mark.django_db
def test_the_copies_earlier_portals_made_are_merged(seeded, django_user_model) -> None:
    from guidance.models import Cluster

    narval = Cluster.objects.get(slug="narval")
    accounts = [
        ClusterAccount.objects.create(
            owner=django_user_model.objects.create_user(f"old{i}"), cluster=narval, username="lab1"
        )
        for i in range(3)
    ]
    now = timezone.now()

    def row(account, slurm_id, origin, name="train"):
        return Job.objects.create(
            owner=account.owner, account=account, name=name, script="", slurm_id=slurm_id,
            origin=origin, submitted=now,
        )  # fmt: skip

    outside = [row(account, "500", JobOrigin.OUTSIDE) for account in accounts]
    portal = row(accounts[1], "501", JobOrigin.PORTAL)
    twins = [row(account, "501", JobOrigin.OUTSIDE) for account in (accounts[0], accounts[2])]
    apart = row(accounts[0], "502", JobOrigin.OUTSIDE, name="other")

    said = io.StringIO()
    call_command("merge_shared_login_jobs", stdout=said)
    assert "Would delete (run with --delete) 4 copies" in said.getvalue()
    assert Job.objects.count() == 7
    call_command("merge_shared_login_jobs", "--delete", stdout=io.StringIO())
    kept = set(Job.objects.values_list("pk", flat=True))
    assert kept == {outside[0].pk, portal.pk, apart.pk}
    assert not kept & {job.pk for job in twins}
