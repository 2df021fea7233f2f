"""Who may submit a job: the task holding it (its own retries and redeliveries included), another
task only once the holder has been silent for SUBMIT_LEASE_SECONDS; and what the sweep hands on.
The lost worker itself, killed for real, is in tests/test_lost_submission.py."""

from datetime import timedelta

import pytest
from django.utils import timezone

from guidance.models import Cluster
from jobs import tasks
from jobs.cluster.errors import ClusterError, ErrorKind
from jobs.models import ClusterAccount, Job, JobState


@pytest.fixture
def job(seeded, user) -> Job:
    account = ClusterAccount.objects.create(
        owner=user,
        cluster=Cluster.objects.get(slug="narval"),
        username="someone",
        public_key="ssh-ed25519 AAAA",
        private_key_encrypted="not used here",
    )
    return Job.objects.create(owner=user, account=account, name="train", script="#!/bin/bash\n")


def _age(job: Job, seconds: float) -> None:
    Job.objects.filter(pk=job.pk).update(submit_started=timezone.now() - timedelta(seconds=seconds))


def test_one_task_holds_a_submission_until_it_falls_silent(job, settings):
    settings.SUBMIT_LEASE_SECONDS = 300
    assert tasks._claim(job, "first")
    assert not tasks._claim(job, "second")  # delivered twice, or clicked twice: one sbatch
    assert tasks._claim(job, "first")  # its own retry
    _age(job, 301)
    assert tasks._claim(job, "second")  # the first was lost
    assert not tasks._claim(job, "first")


def test_a_submitted_job_is_held_by_nobody(job):
    Job.objects.filter(pk=job.pk).update(slurm_id="42", state=JobState.PENDING)
    assert not tasks._claim(job, "first")


def test_the_sweep_hands_on_only_what_has_fallen_silent(
    job, settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.SUBMIT_LEASE_SECONDS = 300
    queued = []
    monkeypatch.setattr(
        tasks.submit_job, "apply_async", lambda args, task_id: queued.append((args, task_id))
    )
    assert tasks._claim(job, "first")
    tasks.sweep_submissions()
    assert queued == []
    _age(job, 301)
    with django_capture_on_commit_callbacks(execute=True):  # queued once the sweep commits
        tasks.sweep_submissions()
    [(args, task_id)] = queued
    assert args == [job.pk]
    job.refresh_from_db()
    assert job.submit_task == task_id  # the new task holds it at once: no other sweep takes it
    tasks.sweep_submissions()
    assert len(queued) == 1
    assert job.events.filter(detail__startswith="Its submission was lost").count() == 1


def test_a_failed_submission_is_held_by_nobody_so_submit_again_works(job):
    assert tasks._claim(job, "first")
    job.refresh_from_db()
    job.submission_failed("Slurm did not take the script.")
    job.retry_submission()
    assert tasks._claim(job, "after the click")


def test_while_the_cluster_does_not_answer_the_job_says_it_waits_for_it(job, monkeypatch):
    seen = []

    def submit(job, script, look_first):
        seen.append(Job.objects.get(pk=job.pk).reason)
        if len(seen) == 1:
            raise ClusterError(ErrorKind.UNREACHABLE, "The cluster did not answer.", retryable=True)
        return "4242"

    monkeypatch.setattr(tasks.remote, "submit", submit)
    tasks.submit_job.apply(args=[job.pk])
    assert seen == ["", "waiting for the cluster, which did not answer: trying again in 2 s"]
    job.refresh_from_db()
    assert (job.state, job.slurm_id, job.reason) == (JobState.PENDING, "4242", "")


def test_a_task_for_a_job_deleted_since_it_was_queued_does_nothing(db):
    # A message that outlived its job (the job's login removed, a database reset under an old
    # broker file) is consumed quietly rather than failing in the worker's log.
    assert tasks.submit_job.apply(args=[987654]).successful()
