"""Notifications of real Slurm jobs on the dev cluster, submitted and polled through the portal's
tasks in-process as beat would run them (tests/test_jobs_cluster.py): a GPU job (the fake NVML,
one GPU idle) tells its start, its idle GPUs and its end; a failing job and one killed for its
memory tell how they failed and what to ask for next. Each exactly once, however often polled."""

import time

import pytest
from django.core import mail

from jobs import tasks
from jobs.models import ClusterAccount, Job, JobState, Notification, NotificationDefaults
from tests.test_jobs_cluster import _follow, _job, _submit
from tests.test_monitoring_cluster import _composed, _name, account, cluster  # noqa: F401

EVERYTHING = {"on_start": True, "on_end": True, "on_failure": True, "on_idle_gpus": True}


@pytest.fixture
def told(account: ClusterAccount) -> ClusterAccount:  # noqa: F811
    owner = account.owner
    owner.email = "alice@example.org"
    owner.save()
    NotificationDefaults.objects.create(owner=owner, **EVERYTHING)
    return account


def _subjects() -> list[str]:
    return [m.subject.removeprefix("[GPU portal] ") for m in mail.outbox]


def _poll_until(job: Job, done, timeout: float) -> Job:
    deadline = time.monotonic() + timeout
    while True:
        tasks.poll_clusters.apply()
        job.refresh_from_db()
        if done(job):
            return job
        assert time.monotonic() < deadline, f"not there within {timeout} s: {job.state}"
        time.sleep(0.5)


def test_a_gpu_job_tells_its_start_its_idle_gpus_and_its_end(told, user_client, settings):
    settings.SAMPLE_SECONDS = 1
    settings.GPU_WARMUP_SECONDS = 3
    name = _name()
    job = Job.objects.create(
        owner=told.owner, account=told, name=name, script=_composed(name, "sleep 14")
    )
    job = _submit(job)
    _poll_until(job, lambda j: j.gpu_warning, 40)
    assert _subjects() == [f"{name} started", f"{name} is not using its GPUs"]
    assert "GPU 1 on" in mail.outbox[1].body and "has done nothing" in mail.outbox[1].body

    _poll_until(job, lambda j: j.is_final, 60)
    for _ in range(2):
        tasks.poll_clusters.apply()  # polled again after its end: nothing new
    assert job.state == JobState.COMPLETED
    assert _subjects() == [
        f"{name} started",
        f"{name} is not using its GPUs",
        f"{name} completed",
    ]
    listed = user_client.get("/jobs/notifications/").content.decode()
    assert listed.count('class="notification unread"') == 3
    assert listed.count(f'href="/jobs/{job.pk}/"') == 3


def test_a_job_that_exits_3_tells_its_failure_once(told):
    job = _submit(_job(told, "exit 3"))
    _follow(job)
    tasks.poll_clusters.apply()
    assert job.state == JobState.FAILED
    failed = [m for m in mail.outbox if "failed" in m.subject]
    assert len(failed) == 1
    assert f"Slurm job {job.slurm_id} ended FAILED with exit code 3." in failed[0].body
    assert Notification.objects.filter(job=job, event="failed").count() == 1


def test_a_job_killed_for_its_memory_tells_the_memory_to_ask_for(told):
    body = "python3 -c 'import time; data = b\"x\" * (400 << 20); time.sleep(30)'"
    job = _submit(_job(told, body, "--mem=100M"))
    _follow(job)
    if job.state != JobState.OUT_OF_MEMORY:
        pytest.skip("no memory cgroup here: Slurm reports the kill as FAILED")
    [sent] = [m for m in mail.outbox if "failed" in m.subject]
    assert sent.subject == f"[GPU portal] {job.name} failed: OUT_OF_MEMORY"
    assert "more than the 100 MB it asked for" in sent.body
    assert "Next run: --mem=1024M instead of 100M." in sent.body
    assert f"/jobs/{job.pk}/" in sent.body


def test_a_job_slurm_refuses_tells_why_it_was_not_submitted(told):
    job = _submit(_job(told, "true", "--partition=nosuch"))
    assert job.state == JobState.SUBMIT_FAILED
    tasks.poll_clusters.apply()  # e-mails go out at the end of a poll
    tasks.poll_clusters.apply()
    [sent] = mail.outbox
    assert sent.subject == f"[GPU portal] {job.name} was not submitted"
    assert "no partition of that name" in sent.body and "Submit again" in sent.body
