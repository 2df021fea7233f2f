"""A poll fills in a job's accounting from sacct: captured text through tracking.apply."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from guidance.models import Cluster
from jobs.cluster import tracking
from jobs.cluster.remote import Snapshot
from jobs.models import ClusterAccount, Job, JobState
from jobs.slurm.sacct import parse_sacct
from jobs.slurm.squeue import parse_squeue
from tests.slurm_captured import captured


def snapshot(squeue: str = "squeue_finished.txt", sacct: str = "sacct.txt") -> Snapshot:
    return Snapshot(parse_squeue(captured(squeue)), parse_sacct(captured(sacct)))


@pytest.fixture
def account(seeded, user) -> ClusterAccount:
    return ClusterAccount.objects.create(
        owner=user,
        cluster=Cluster.objects.get(slug="narval"),
        username="portaltest",
        public_key="ssh-ed25519 AAAA",
        private_key_encrypted="not used here",
    )


def _jobs(account: ClusterAccount, *slurm_ids: str) -> list[Job]:
    for slurm_id in slurm_ids:
        Job.objects.create(
            owner=account.owner,
            account=account,
            name=f"job-{slurm_id}",
            script="#!/bin/bash\n",
            slurm_id=slurm_id,
            state=JobState.PENDING,
        )
    return list(Job.objects.filter(slurm_id__in=slurm_ids).order_by("slurm_id"))


def _poll(account: ClusterAccount, *slurm_ids: str, **captured_files: str) -> dict[str, Job]:
    jobs = list(Job.objects.filter(account=account, slurm_id__in=slurm_ids))
    tracking.apply(snapshot(**captured_files), jobs)
    return {job.slurm_id: job for job in Job.objects.filter(slurm_id__in=slurm_ids)}


def test_it_saves_what_a_finished_job_was_given_and_used(account):
    _jobs(account, "36")
    memory = _poll(account, "36")["36"]
    assert memory.state == JobState.COMPLETED
    assert (memory.partition, memory.gpus, memory.gpu_type, memory.cpus) == ("gpu-a100", 0, "", 1)
    assert (memory.elapsed_seconds, memory.time_limit_seconds) == (41, 120)
    assert (memory.longest_task_seconds, memory.task_time_limit_seconds) == (41, 120)
    assert memory.cpu_seconds == pytest.approx(0.275)
    assert memory.max_rss_mb == pytest.approx(316688 / 1024)  # from its batch step
    assert memory.requested_memory_mb == 1024


def test_it_saves_the_gpus_and_their_type(account):
    _jobs(account, "31", "37")
    jobs = _poll(account, "31", "37")
    assert (jobs["31"].partition, jobs["31"].gpus, jobs["31"].gpu_type) == ("gpu-a100", 1, "a100")
    assert (jobs["37"].partition, jobs["37"].gpus, jobs["37"].gpu_type) == ("gpu-rtx", 2, "rtx")
    assert jobs["37"].elapsed_seconds == 20
    assert jobs["37"].max_rss_mb is None  # no step reported a peak


def test_a_chain_adds_up_its_parts_times_and_keeps_the_largest_peak(account):
    text = (
        captured("sacct.txt")
        .replace("|00:00.003|||||batch||\n35_2.batch", "|00:00.003|2048K||||batch||\n35_2.batch")
        .replace("|00:00.003|||||batch||\n35_3|", "|00:00.003|8192K||||batch||\n35_3|")
    )
    assert text != captured("sacct.txt")
    (chain,) = _jobs(account, "35")
    queue = parse_squeue(captured("squeue_finished.txt"))
    tracking.apply(Snapshot(queue, parse_sacct(text)), [chain])
    chain.refresh_from_db()
    assert chain.state == JobState.COMPLETED
    assert chain.tasks.count() == 3
    assert chain.elapsed_seconds == 12  # 3 parts of 4 s
    assert chain.time_limit_seconds == 3 * 600  # each part may take 10 minutes
    assert (chain.longest_task_seconds, chain.task_time_limit_seconds) == (4, 600)  # one part's
    assert chain.cpu_seconds == pytest.approx(0.003 + 0.003 + 0.002)
    assert chain.max_rss_mb == pytest.approx(8)  # the second part's 8192K
    assert (chain.partition, chain.cpus, chain.gpus) == ("gpu-a100", 1, 0)


def test_a_pending_job_has_its_partition_but_no_allocation_yet(account):
    _jobs(account, "38", "36")
    jobs = _poll(account, "38", "36", squeue="squeue_active.txt", sacct="sacct_active.txt")
    pending, running = jobs["38"], jobs["36"]
    assert pending.state == JobState.PENDING
    assert (pending.partition, pending.gpus, pending.cpus, pending.elapsed_seconds) == (
        "gpu-rtx",
        None,
        None,
        0,
    )
    assert running.state == JobState.RUNNING
    assert (running.elapsed_seconds, running.max_rss_mb) == (6, None)

    # The next poll sees them finished: the figures follow.
    jobs = _poll(account, "38", "36")
    assert (jobs["38"].gpus, jobs["38"].gpu_type, jobs["38"].elapsed_seconds) == (1, "rtx", 2)
    assert jobs["36"].elapsed_seconds == 41
    assert jobs["36"].max_rss_mb == pytest.approx(316688 / 1024)


def test_a_change_to_the_accounting_alone_is_saved(account):
    _jobs(account, "36", "35")
    _poll(account, "36", "35")
    # State, times and nodes already match sacct: only the accounting differs.
    Job.objects.update(
        partition="", gpus=None, cpus=None, elapsed_seconds=None, cpu_seconds=None, max_rss_mb=None
    )
    jobs = _poll(account, "36", "35")
    assert (jobs["36"].partition, jobs["36"].elapsed_seconds, jobs["36"].cpus) == (
        "gpu-a100",
        41,
        1,
    )
    assert jobs["36"].max_rss_mb == pytest.approx(316688 / 1024)
    assert (jobs["35"].elapsed_seconds, jobs["35"].gpus) == (12, 0)


def test_a_poll_that_changes_nothing_saves_nothing(account):
    _jobs(account, "31", "35", "36", "37")
    _poll(account, "31", "35", "36", "37")
    jobs = list(Job.objects.filter(account=account))
    with CaptureQueriesContext(connection) as queries:
        tracking.apply(snapshot(), jobs)
    job_updates = [q["sql"] for q in queries if q["sql"].startswith('UPDATE "jobs_job"')]
    assert len(job_updates) == 1  # the poll stamp only
    assert '"polled"' in job_updates[0] and '"elapsed_seconds"' not in job_updates[0]


def test_an_earlier_job_of_the_same_id_is_not_taken_for_ours(account):
    # A controller that lost its state numbers jobs from 1 again: sacct still lists the earlier
    # job of an id, squeue a later one. The portal's comment on each row tells whose it is.
    (job,) = _jobs(account, "36")
    row = "|00:00.275||1G|00:02:00|gpu-a100|memory|/home/portaltest|\n"
    theirs = captured("sacct.txt").replace(row, row.replace("\n", "portal:someone-else\n"), 1)
    assert theirs != captured("sacct.txt")
    tracking.apply(Snapshot([], parse_sacct(theirs)), [job])
    job.refresh_from_db()
    assert job.state == JobState.PENDING
    # Nor a new job of that id in the queue while ours is still tracked.
    running = "36|36|N/A|RUNNING|None|2026-11-22T04:08:05|0:05|2:00|a100-1|portaltest|memory|"
    queue = captured("squeue_active.txt").replace(f"{running}(null)", f"{running}portal:another")
    assert queue != captured("squeue_active.txt")
    tracking.apply(Snapshot(parse_squeue(queue), []), [job])
    job.refresh_from_db()
    assert job.state == JobState.PENDING

    ours = captured("sacct.txt").replace(row, row.replace("\n", f"portal:{job.tag}\n"), 1)
    tracking.apply(
        Snapshot(parse_squeue(captured("squeue_finished.txt")), parse_sacct(ours)), [job]
    )
    job.refresh_from_db()
    assert (job.state, job.elapsed_seconds) == (JobState.COMPLETED, 41)
