"""The cluster-wide reader (jobs.cluster.reader_poll) on the real dev cluster: every login's jobs
read through the read-only service login portalreader with the same Slurm requests per cycle for
10 and for 1,000 logins, counted by Slurm itself (slurmctld's and slurmdbd's RPCs by user) and by
the gateway; each user still sees only their own jobs; a reader that cannot answer says so.

Other sessions share the cluster's test user: the tests look for their own jobs by id.
"""

import io
import re
import socket
import subprocess
import time

import pytest
from django.core.management import call_command
from django.utils import timezone

from jobs import tasks
from jobs.cluster import keys, reader_poll, remote
from jobs.cluster.errors import ClusterError, ErrorKind
from jobs.cluster.gateway import gateway
from jobs.models import ClusterAccount, ClusterReader, Job, JobState
from portal.models import ApiToken
from tests.devcluster import DEVCLUSTER, read_env

HELD = "#!/bin/bash\n#SBATCH --hold\n#SBATCH --time=00:05:00\ntrue\n"


@pytest.fixture
def env(devcluster) -> dict[str, str]:
    done = subprocess.run([str(DEVCLUSTER), "env"], capture_output=True, text=True, check=True)
    return read_env(done.stdout)


@pytest.fixture
def reader(local_login, user) -> ClusterReader:
    call_command("register_devcluster", user.username, "--reader", stdout=io.StringIO())
    return ClusterReader.objects.select_related("cluster").get(cluster=local_login.cluster)


@pytest.fixture
def slurm_jobs(devcluster):
    """Slurm job ids the test made: cancelled at its end, whatever happens."""
    made: list[str] = []
    yield made
    if made:
        devcluster.as_operator("scancel", *made)


def _portal_job(account: ClusterAccount, slurm_id: str, **fields) -> Job:
    return Job.objects.create(
        owner=account.owner,
        account=account,
        name=fields.pop("name", f"job-{slurm_id}"),
        script=HELD,
        slurm_id=slurm_id,
        state=fields.pop("state", JobState.PENDING),
        submitted=timezone.now(),
        **fields,
    )


def _held_job(account: ClusterAccount, slurm_jobs: list[str], name: str) -> Job:
    """A held job submitted through the account's own login, tagged as the portal tags its jobs."""
    job = _portal_job(account, "", name=name)
    argv = ["sbatch", "--parsable", f"--comment={remote.tag(job)}"]
    result = gateway.run(remote.login_for(account), argv, stdin=HELD)
    assert result.exit_status == 0, result.stderr
    job.slurm_id = result.stdout.strip().split(";")[0]
    job.save(update_fields=["slurm_id"])
    slurm_jobs.append(job.slurm_id)
    return job


def _held_job_of(devcluster, unix_user: str, slurm_jobs: list[str], comment: str = "") -> str:
    """A held job of another Unix user's, submitted as them on this machine (root's runuser)."""
    conf = f"SLURM_CONF={devcluster.lab}/etc/slurm.conf"
    argv = ["sbatch", "--parsable", "--chdir=/tmp", *([f"--comment={comment}"] if comment else [])]
    done = subprocess.run(
        ["runuser", "-u", unix_user, "--", "env", conf, *argv],
        input=HELD,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    slurm_jobs.append(done.stdout.strip().split(";")[0])
    return slurm_jobs[-1]


class CountedCommands:
    """The commands the gateway sends, by user name, around the real gateway."""

    def __init__(self):
        self.argvs: list[tuple[str, list[str]]] = []
        self._run = gateway.run

    def __enter__(self):
        def run(login, argv, *args, **kwargs):
            self.argvs.append((login.username, list(argv)))
            return self._run(login, argv, *args, **kwargs)

        gateway.run = run
        return self

    def __exit__(self, *exc):
        gateway.run = self._run

    def programs(self) -> list[str]:
        return sorted(next(a for a in argv if a in ("squeue", "sacct")) for _, argv in self.argvs)


def _rpcs_by_user(devcluster, *argv: str, user: str) -> int:
    """The RPC count of `user` in sdiag's or `sacctmgr show stats`' "by user" table."""
    text = devcluster.as_operator(*argv)
    table = text.split("statistics by user", 1)[1]
    found = re.search(rf"^\s*{re.escape(user)}\s*\(\s*\d+\)\s*count:(\d+)", table, re.MULTILINE)
    return int(found[1]) if found else 0


def _slurm_requests(devcluster, user: str) -> tuple[int, int]:
    """RPCs the reader's Unix user made so far: to slurmctld (squeue), to slurmdbd (sacct)."""
    return (
        _rpcs_by_user(devcluster, "sdiag", user=user),
        _rpcs_by_user(devcluster, "sacctmgr", "show", "stats", user=user),
    )


def _logins(django_user_model, cluster, unix_user: str, n: int, tag: str) -> list:
    """`n` portal users, each with a login as `unix_user` (keys never used: the reader reads for
    them) and one active job whose id Slurm does not know."""
    users = django_user_model.objects.bulk_create(
        django_user_model(username=f"{tag}-{i}") for i in range(n)
    )
    secret = keys.encrypt(keys.generate_keypair().private_pem)
    ClusterAccount.objects.bulk_create(
        ClusterAccount(
            owner=owner,
            cluster=cluster,
            username=unix_user,
            public_key="ssh-ed25519 AAAA",
            private_key_encrypted=secret,
        )
        for owner in users
    )
    accounts = list(ClusterAccount.objects.filter(owner__in=users).select_related("cluster"))
    Job.objects.bulk_create(
        Job(
            owner=account.owner,
            account=account,
            name="not in Slurm",
            script="",
            slurm_id=str(9_000_000 + account.pk),
            state=JobState.PENDING,
            submitted=timezone.now(),
        )
        for account in accounts
    )
    return accounts


def test_a_cycle_makes_the_same_slurm_requests_for_10_and_for_1000_logins(
    devcluster, env, reader, django_user_model, slurm_jobs, reads_history
):
    # The lab's second Unix user, whom only these tests use: what Slurm has of it is the same
    # in both cycles (sacct asks slurmdbd for TRES names only when some row has them, so other
    # sessions' jobs of the test user would change the count, not the number of logins).
    unix_user, cluster = env["DEVCLUSTER_OTHER_USER"], reader.cluster
    figures, held = {}, []
    for n in (10, 1000):
        accounts = _logins(django_user_model, cluster, unix_user, n, f"n{n}")
        for account in accounts[:3]:  # a few real held jobs among them, tagged as the portal's
            job = _portal_job(account, "", name="held")
            job.slurm_id = _held_job_of(devcluster, unix_user, slurm_jobs, remote.tag(job))
            job.save(update_fields=["slurm_id"])
            held.append(job)
        # Every login's history is due: the third command is in each cycle.
        ClusterAccount.objects.update(history_read_until=None)
        before = _slurm_requests(devcluster, reader.username)
        began = time.monotonic()
        with CountedCommands() as sent:
            read = reader_poll.poll_cluster(cluster, accounts, timezone.now())
        seconds = time.monotonic() - began
        time.sleep(1)  # slurmdbd counts a connection's last RPC a moment after sacct has exited
        after = _slurm_requests(devcluster, reader.username)
        # They all share one Unix user: one login group, read (and returned) once, as its
        # oldest login (jobs.cluster.login_group).
        oldest = ClusterAccount.objects.filter(username=unix_user).order_by("pk").first()
        assert read == [oldest]
        assert {user for user, _ in sent.argvs} == {reader.username}
        figures[n] = (sent.programs(), (after[0] - before[0], after[1] - before[1]), seconds)
    print(f"\nprograms, (slurmctld RPCs, slurmdbd RPCs), seconds by logins: {figures}")
    assert figures[10][0] == figures[1000][0] == ["sacct", "sacct", "squeue"]
    # slurmctld: squeue's requests. slurmdbd: three per sacct (connect, the query, goodbye), and
    # a fourth when a row it prints has an allocation (the TRES names, asked once per sacct):
    # that follows what jobs there are, not how many logins ask.
    assert figures[10][1][0] == figures[1000][1][0]
    assert 6 <= figures[10][1][1] <= 8 and 6 <= figures[1000][1][1] <= 8
    for job in held:
        job.refresh_from_db()
        assert (job.state, job.reason) == (JobState.PENDING, "JobHeldUser")
        assert job.polled is not None


def _listed(client, owner) -> set[str]:
    secret = ApiToken.issue(owner, "test")[1]
    response = client.get("/api/v1/jobs", headers={"Authorization": f"Bearer {secret}"})
    assert response.status_code == 200
    body = response.json()
    return {job["slurm_id"] for job in (body["items"] if isinstance(body, dict) else body)}


def test_each_user_sees_only_their_own_jobs(
    client, devcluster, env, reader, local_login, django_user_model, slurm_jobs
):
    alice = local_login
    bob_user = django_user_model.objects.create_user("bob")
    bob = ClusterAccount.objects.create(
        owner=bob_user,
        cluster=alice.cluster,
        username=env["DEVCLUSTER_OTHER_USER"],
        public_key="ssh-ed25519 AAAA",
        private_key_encrypted=alice.private_key_encrypted,
    )
    alices = _held_job(alice, slurm_jobs, "alices")
    bobs = _portal_job(bob, "", name="bobs")
    bobs.slurm_id = _held_job_of(devcluster, bob.username, slurm_jobs, remote.tag(bobs))
    bobs.save(update_fields=["slurm_id"])
    # A job of bob's Unix user from a terminal (no portal tag), and a row of alice's that names
    # its id: bob's job must never be applied to alice's login.
    theirs = _held_job_of(devcluster, bob.username, slurm_jobs)
    trap = _portal_job(alice, theirs, name="trap", state=JobState.RUNNING)

    read = reader_poll.poll_cluster(alice.cluster, [alice, bob], timezone.now())

    assert read == [alice, bob]
    for job in (alices, bobs):
        job.refresh_from_db()
        assert (job.state, job.reason) == (JobState.PENDING, "JobHeldUser")
    trap.refresh_from_db()
    assert (trap.state, trap.reason, trap.polled is not None) == (JobState.RUNNING, "", True)
    assert _listed(client, alice.owner) == {alices.slurm_id, theirs}
    assert _listed(client, bob_user) == {bobs.slurm_id}


def test_a_reader_whose_key_is_refused_raises_a_plain_cluster_error(reader, local_login):
    reader.private_key_encrypted = keys.encrypt(keys.generate_keypair().private_pem)
    reader.save()
    with pytest.raises(ClusterError) as raised:
        reader_poll.poll_cluster(local_login.cluster, [local_login], timezone.now())
    assert raised.value.kind is ErrorKind.AUTH_FAILED
    assert "refused the portal's SSH key for the account 'portalreader'" in raised.value.message
    reader.refresh_from_db()
    assert reader.reading_until is None  # the hold goes with the failed read


def test_a_reader_that_is_not_there_raises_a_plain_cluster_error(reader, local_login):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    cluster = local_login.cluster
    cluster.login_port = closed
    with pytest.raises(ClusterError) as raised:
        reader_poll.poll_cluster(cluster, [local_login], timezone.now())
    assert raised.value.kind is ErrorKind.UNREACHABLE
    assert f"could not reach the cluster at 127.0.0.1:{closed}" in raised.value.message


def test_a_switched_off_reader_is_not_configured_and_says_so(reader, local_login):
    assert reader_poll.configured(local_login.cluster)
    ClusterReader.objects.filter(pk=reader.pk).update(enabled=False)
    assert not reader_poll.configured(local_login.cluster)
    with pytest.raises(ClusterError, match="no cluster-wide reader switched on"):
        reader_poll.poll_cluster(local_login.cluster, [local_login], timezone.now())


def test_a_reader_held_by_another_worker_reads_nothing(reader, local_login):
    until = timezone.now() + timezone.timedelta(seconds=60)
    ClusterReader.objects.filter(pk=reader.pk).update(reading_until=until, read_by="other")
    with CountedCommands() as sent:
        assert reader_poll.poll_cluster(local_login.cluster, [local_login], timezone.now()) == []
    assert sent.argvs == []


# -- admin ------------------------------------------------------------------------------------


ADD = "/admin/jobs/clusterreader/add/"


def _cluster():
    from guidance.models import Cluster

    return Cluster.objects.first()


def test_an_admin_adds_a_reader_whose_key_the_portal_makes_and_never_shows(seeded, staff_client):
    cluster = _cluster()
    response = staff_client.post(
        ADD, {"cluster": cluster.pk, "username": "svc-reader", "enabled": "on"}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    reader = ClusterReader.objects.get(cluster=cluster)
    private = keys.decrypt(reader.private_key_encrypted)
    assert "PRIVATE KEY" in private and "PRIVATE KEY" not in reader.private_key_encrypted
    assert reader.public_key.startswith("ssh-ed25519 ")
    page = staff_client.get(f"/admin/jobs/clusterreader/{reader.pk}/change/").content.decode()
    assert f"restrict {reader.public_key}" in page  # the line to authorize, whole
    assert "PRIVATE KEY" not in page and reader.private_key_encrypted not in page
    body = private.splitlines()[1]
    assert body not in page


def test_an_admin_pastes_the_sites_key_which_is_stored_encrypted(seeded, staff_client):
    cluster = _cluster()
    pair = keys.generate_keypair()
    form = {"cluster": cluster.pk, "username": "svc-reader", "enabled": "on"}
    refused = staff_client.post(ADD, {**form, "private_key": "not a key at all"})
    assert refused.status_code == 200 and "not a key at all" not in refused.content.decode()
    response = staff_client.post(ADD, {**form, "private_key": pair.private_pem})
    assert response.status_code == 302
    reader = ClusterReader.objects.get(cluster=cluster)
    assert reader.public_key.split()[:2] == pair.public_line.split()[:2]
    assert pair.private_pem not in reader.private_key_encrypted
    stored = keys.pair_of(keys.decrypt(reader.private_key_encrypted))
    assert stored.public_line == pair.public_line
    page = staff_client.get(f"/admin/jobs/clusterreader/{reader.pk}/change/").content.decode()
    assert pair.private_pem.splitlines()[1] not in page
    # Saved again untouched, it keeps its key; asked for a new pair, it gets one.
    change = f"/admin/jobs/clusterreader/{reader.pk}/change/"
    staff_client.post(change, form)
    reader.refresh_from_db()
    assert reader.public_key.split()[:2] == pair.public_line.split()[:2]
    staff_client.post(change, {**form, "new_key": "on"})
    reader.refresh_from_db()
    assert reader.public_key.split()[:2] != pair.public_line.split()[:2]


@pytest.mark.django_db(transaction=True)
def test_beat_reads_a_cluster_with_a_reader_through_it_and_falls_back_to_each_login(
    reader, local_login, slurm_jobs, devcluster
):
    job = _held_job(local_login, slurm_jobs, "through-the-reader")
    # The login's own key no longer works: only the reader can tell the job is held.
    own_key = local_login.private_key_encrypted
    local_login.private_key_encrypted = keys.encrypt(keys.generate_keypair().private_pem)
    local_login.save()
    tasks.poll_clusters()
    job.refresh_from_db()
    assert (job.state, job.reason, job.stale) == (JobState.PENDING, "JobHeldUser", False)

    # Cancelled on the cluster; the reader switched off: the login's own poll sees it, once its
    # key works again (with the wrong one its jobs only show as stale).
    devcluster.as_operator("scancel", job.slurm_id)
    ClusterReader.objects.filter(pk=reader.pk).update(enabled=False)
    tasks.poll_clusters()
    job.refresh_from_db()
    assert job.stale and job.state == JobState.PENDING
    ClusterAccount.objects.filter(pk=local_login.pk).update(private_key_encrypted=own_key)
    tasks.poll_clusters()
    job.refresh_from_db()
    assert job.state in (JobState.COMPLETING, JobState.CANCELLED) and not job.stale
