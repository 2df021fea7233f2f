"""The cluster-wide read on real Slurm: the free-GPU view agrees with the nodes while jobs run
and a node is drained, a waiting job knows how many jobs come before it, and the read costs one
sinfo and one squeue per cluster per cycle, whatever the number of logins."""

import io
import re
import time
import uuid

import pytest
from django.core.management import call_command

from jobs import tasks
from jobs.cluster.gateway import gateway
from jobs.models import ClusterAccount, ClusterLoad, Job, JobState
from jobs.slurm.free_gpus import FREE_GPUS_ARGV
from jobs.slurm.pending import PENDING_ARGV

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def account(local_login) -> ClusterAccount:
    return local_login


@pytest.fixture
def cleanup(devcluster):
    """Cancels the test's jobs and resumes the nodes it drained, whatever happens."""
    names, drained = [], []
    yield names, drained
    for name in names:
        devcluster.ssh(f"scancel --name={name}")
    for node in drained:
        devcluster.on_node(node, f"scontrol update nodename={node} state=resume")


def _sbatch(devcluster, names: list, *options: str) -> str:
    name = f"gpus-{uuid.uuid4().hex[:8]}"
    names.append(name)
    said = devcluster.ssh(
        f"sbatch --parsable --job-name={name} --time=00:03:00 --output=/dev/null "
        f"{' '.join(options)} --wrap 'sleep 120'"
    )
    assert said.returncode == 0, said.stderr
    return said.stdout.strip()


def _wait_until(devcluster, slurm_id: str, state: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if devcluster.ssh(f"squeue -h -j {slurm_id} -o %T").stdout.strip() == state:
            return
        time.sleep(0.5)
    pytest.fail(f"job {slurm_id} never {state}")


def _scontrol_counts(devcluster) -> dict[str, tuple[int, int, int]]:
    """Per partition: GPUs, GPUs allocated and GPUs on nodes that take no jobs, read from
    scontrol's node records (not the sinfo line the portal reads)."""
    counts: dict[str, list[int]] = {}
    for line in devcluster.ssh("scontrol -o show node").stdout.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        total = int(re.search(r"gres/gpu=(\d+)", fields["CfgTRES"])[1])
        used = re.search(r"gres/gpu=(\d+)", fields.get("AllocTRES", ""))
        used = int(used[1]) if used else 0
        closed = any(word in fields["State"] for word in ("DRAIN", "DOWN"))
        for partition in fields["Partitions"].split(","):
            count = counts.setdefault(partition, [0, 0, 0])
            count[0] += total
            count[1] += used
            count[2] += total - used if closed else 0
    return {partition: tuple(count) for partition, count in counts.items()}


def _rows(cluster) -> dict[str, dict]:
    return {row["partition"]: row for row in ClusterLoad.objects.get(cluster=cluster).gpus}


def test_the_free_gpus_agree_with_the_nodes_while_jobs_run_and_a_node_is_drained(
    account, devcluster, cleanup, user_client, client, secret
):
    names, drained = cleanup
    running = _sbatch(devcluster, names, "--partition=gpu-a100", "--gres=gpu:a100:1")
    _wait_until(devcluster, running, "RUNNING")
    drained.append("rtx-1")
    devcluster.on_node("rtx-1", "scontrol update nodename=rtx-1 state=drain reason=portal-test")

    tasks.poll_clusters.apply()

    rows = _rows(account.cluster)
    expected = _scontrol_counts(devcluster)
    for partition in ("gpu-a100", "gpu-rtx"):
        row = rows[partition]
        assert (row["total"], row["allocated"], row["unavailable"]) == expected[partition]
    assert (rows["gpu-a100"]["allocated"], rows["gpu-a100"]["free"]) == (1, 3)
    assert (rows["gpu-rtx"]["unavailable"], rows["gpu-rtx"]["free"]) == (2, 0)

    page = user_client.get("/jobs/gpus/").content.decode()
    assert re.search(r'data-partition="gpu-a100".*?<strong>3</strong>', page, re.S)
    assert "Read now" in page or "seconds ago" in page
    # The composer shows the chosen cluster's free GPUs beside the GPU type.
    brief = user_client.get("/jobs/gpus/brief/", {"cluster": "local"}).content.decode()
    assert "gpu-a100: <strong>3</strong> of 4 a100" in brief
    assert "gpu-rtx: <strong>0</strong> of 2 rtx" in brief
    assert 'hx-get="/jobs/gpus/brief/"' in user_client.get("/jobs/new/").content.decode()
    # The API gives the same figures, with their age.
    bearer = {"Authorization": f"Bearer {secret}"}
    answer = client.get("/api/v1/clusters/local/gpus", headers=bearer).json()
    by_partition = {row["partition"]: row for row in answer["gpus"]}
    assert (by_partition["gpu-a100"]["free"], by_partition["gpu-rtx"]["unavailable"]) == (3, 2)
    assert answer["read_at"] and not answer["error"]
    assert client.get("/api/v1/clusters/nowhere/gpus", headers=bearer).status_code == 404


def test_a_waiting_job_knows_how_many_jobs_come_before_it(account, devcluster, cleanup):
    names, _ = cleanup
    # Both a100 nodes busy: the next jobs wait, in the order Slurm will start them.
    for _ in range(2):
        filler = _sbatch(devcluster, names, "--partition=gpu-a100", "--gres=gpu:a100:2")
        _wait_until(devcluster, filler, "RUNNING")
    first = _sbatch(devcluster, names, "--partition=gpu-a100", "--gres=gpu:a100:2")
    second = _sbatch(devcluster, names, "--partition=gpu-a100", "--gres=gpu:a100:1")
    jobs = [
        Job.objects.create(
            owner=account.owner, account=account, name=f"wait-{n}", script="#!/bin/bash\n",
            slurm_id=slurm_id, state=JobState.PENDING,
        )
        for n, slurm_id in enumerate((first, second))
    ]  # fmt: skip

    tasks.poll_clusters.apply()

    for job in jobs:
        job.refresh_from_db()
    assert [job.ahead_in_queue for job in jobs] == [0, 1]
    assert ClusterLoad.objects.get(cluster=account.cluster).gpus
    assert _rows(account.cluster)["gpu-a100"]["pending"] >= 3


def test_the_cluster_is_read_once_per_cycle_whatever_the_number_of_logins(
    account, devcluster, cleanup, django_user_model
):
    names, _ = cleanup
    accounts = [account]
    for name in ("bob", "carol"):
        django_user_model.objects.create_user(name, password="x")
        call_command("register_devcluster", name, stdout=io.StringIO())
        accounts.append(ClusterAccount.objects.get(owner__username=name))
    for login in accounts:  # each login has a job waiting
        slurm_id = _sbatch(devcluster, names, "--hold")
        Job.objects.create(
            owner=login.owner, account=login, name="held", script="#!/bin/bash\n",
            slurm_id=slurm_id, state=JobState.PENDING,
        )  # fmt: skip

    ran: list[list[str]] = []
    real_run = gateway.run

    def counting(login, argv, **kwargs):
        ran.append(list(argv))
        return real_run(login, argv, **kwargs)

    gateway.run = counting
    try:
        tasks.poll_clusters.apply()
        first_cycle = list(ran)
        ran.clear()
        tasks.poll_clusters.apply()  # a second poll within the same cycle
    finally:
        gateway.run = real_run

    assert first_cycle.count(FREE_GPUS_ARGV) == 1
    assert first_cycle.count(PENDING_ARGV) == 1
    # One per Unix login: these three portal users share one, which is read once (#39).
    unix_logins = {(login.cluster_id, login.username) for login in accounts}
    assert sum("sacct" in argv for argv in first_cycle) == len(unix_logins)
    assert FREE_GPUS_ARGV not in ran and PENDING_ARGV not in ran
