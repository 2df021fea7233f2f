"""Notifications through the poller's own path (tasks.poll_clusters, with Slurm's answers faked
from captured output as in test_job_states.py): each event of a job gives one e-mail (Django's
test outbox) and one entry in the portal's list and the browser's JSON, however often it is
polled; the user's choices switch them off; nobody else sees them. Real Slurm jobs are in
test_notifications_cluster.py."""

import json
import re
import smtplib

import pytest
from django.core import mail
from django.db import OperationalError
from django.utils.html import escape

from guidance.models import Cluster
from jobs import tasks
from jobs.cluster import remote
from jobs.cluster.remote import Snapshot
from jobs.gpu import sample_files
from jobs.gpu.efficiency import refresh_warning
from jobs.models import (
    ClusterAccount,
    EmailStatus,
    Job,
    JobNotificationChoice,
    JobOrigin,
    JobState,
    Notification,
    NotificationDefaults,
    NotifyEvent,
)
from jobs.notify import mail as notify_mail
from jobs.notify import record
from jobs.slurm.sacct import parse_sacct
from jobs.slurm.squeue import parse_squeue
from tests.test_efficiency import add_samples, resnet_job
from tests.test_job_states import FakeCluster, _job, captured

EVERYTHING = {"on_start": True, "on_end": True, "on_failure": True, "on_idle_gpus": True}

# An event: the squeue and sacct output that makes it, the job's id there, and what the e-mail
# must say (what happened, and what to do).
EVENTS = {
    "started": ("squeue_active.txt", "sacct_active.txt", "36", ["started"]),
    "completed": ("", "sacct.txt", "36", ["ran to the end", "efficiency report"]),
    "failed": ("", "sacct.txt", "32", ["ended FAILED with exit code 3", "stderr"]),
    "out_of_memory": (
        "",
        "sacct_final_states_handwritten.txt",
        "104",
        ["ended OUT_OF_MEMORY", "more than the 500 MB", "--mem=1024M instead of 500M"],
    ),
    "timeout": ("", "sacct.txt", "33", ["ended TIMEOUT", "--time=0:15:00 instead of 0:01:00"]),
    "node_fail": ("", "sacct_final_states_handwritten.txt", "103", ["ended NODE_FAIL", "not your"]),
}


@pytest.fixture
def cluster(monkeypatch) -> FakeCluster:
    fake = FakeCluster()
    monkeypatch.setattr(remote, "poll", fake.poll)
    monkeypatch.setattr(sample_files, "collect", lambda account, jobs: None)
    return fake


@pytest.fixture
def account(seeded, user) -> ClusterAccount:
    return ClusterAccount.objects.create(
        owner=user,
        cluster=Cluster.objects.get(slug="narval"),
        username="portaltest",
        public_key="ssh-ed25519 AAAA",
        private_key_encrypted="not used here",
    )


@pytest.fixture
def everything(user) -> NotificationDefaults:
    user.email = "alice@example.org"
    user.save()
    return NotificationDefaults.objects.create(owner=user, **EVERYTHING)


def _poll(cluster: FakeCluster, squeue: str, sacct: str) -> None:
    cluster.snapshot = Snapshot(parse_squeue(captured(squeue)), parse_sacct(captured(sacct)))
    tasks.poll_clusters()


def _ticked(page: str) -> set[str]:
    return set(re.findall(r'<input type="checkbox" name="(\w+)"[^>]* checked>', page))


def _pushed(client) -> list[dict]:
    return json.loads(client.post("/jobs/notifications/new/").content)["notifications"]


@pytest.mark.parametrize("event", EVENTS)
def test_each_event_sends_one_email_and_one_browser_notification(
    event, account, cluster, everything, user_client
):
    squeue, sacct, slurm_id, words = EVENTS[event]
    job = _job(account, slurm_id)
    for _ in range(3):  # beat polls again, and a poll is repeated after a fault
        _poll(cluster, squeue, sacct)

    assert len(mail.outbox) == 1
    sent = mail.outbox[0]
    assert sent.to == ["alice@example.org"]
    assert job.name in sent.subject
    assert f"http://127.0.0.1:8000/jobs/{job.pk}/" in sent.body
    for word in words:
        assert word in sent.body

    listed = user_client.get("/jobs/notifications/").content.decode()
    assert listed.count('class="notification unread"') == 1
    assert f'href="/jobs/{job.pk}/"' in listed
    pushed = _pushed(user_client)
    assert [n["url"] for n in pushed] == [f"/jobs/{job.pk}/"]
    assert words[0] in pushed[0]["body"] or words[0] in pushed[0]["title"]
    assert _pushed(user_client) == []  # shown once, in one tab


def test_a_job_that_starts_then_fails_sends_two_and_reads_them_in_the_list(
    account, cluster, everything, user_client
):
    job = _job(account, "36")
    _poll(cluster, "squeue_active.txt", "sacct_active.txt")
    assert 'aria-label="1 unread"' in user_client.get("/jobs/notifications/count/").content.decode()
    _poll(cluster, "", "sacct.txt")
    assert [m.subject for m in mail.outbox] == [
        f"[GPU portal] {job.name} started",
        f"[GPU portal] {job.name} completed",
    ]
    assert 'aria-label="2 unread"' in user_client.get("/jobs/notifications/count/").content.decode()
    page = user_client.get("/jobs/notifications/").content.decode()
    assert page.index("completed") < page.index("started")  # newest first
    assert "unread" not in user_client.get("/jobs/notifications/count/").content.decode()


def test_by_default_a_start_is_not_told_but_an_end_is(account, cluster, user, user_client):
    user.email = "alice@example.org"
    user.save()
    job = _job(account, "32")
    _poll(cluster, "squeue_active.txt", "sacct_active.txt")
    _poll(cluster, "", "sacct.txt")
    assert [m.subject for m in mail.outbox] == [f"[GPU portal] {job.name} failed: FAILED"]


def test_switched_off_events_and_channels_are_not_sent(account, cluster, everything, user_client):
    everything.on_failure = False
    everything.save()
    _job(account, "32")
    _poll(cluster, "", "sacct.txt")
    assert mail.outbox == [] and not Notification.objects.exists()

    everything.on_failure, everything.by_email = True, False
    everything.save()
    _job(account, "33")  # TIMEOUT: listed, not e-mailed
    _poll(cluster, "", "sacct.txt")
    assert mail.outbox == []
    assert "failed: TIMEOUT" in user_client.get("/jobs/notifications/").content.decode()

    everything.by_email, everything.in_browser = True, False
    everything.save()
    _job(account, "104")  # OUT_OF_MEMORY: e-mailed, not listed
    _poll(cluster, "", "sacct_final_states_handwritten.txt")
    assert len(mail.outbox) == 1
    assert "OUT_OF_MEMORY" not in user_client.get("/jobs/notifications/").content.decode()


def test_a_jobs_own_choice_starts_from_the_default_and_overrides_it(
    account, cluster, everything, user_client
):
    job = _job(account, "32")
    form = user_client.get(f"/jobs/{job.pk}/notifications/").content.decode()
    assert _ticked(form) == set(EVERYTHING) | {"by_email", "in_browser"}  # the default, for now
    assert "Your <a" in form
    # Saved with only "when it ends" and "in the portal" ticked: a failure is not told.
    answer = user_client.post(
        f"/jobs/{job.pk}/notifications/", {"on_end": "on", "in_browser": "on"}
    )
    assert answer.status_code == 302
    choice = JobNotificationChoice.objects.get(job=job)
    assert (choice.on_end, choice.on_failure, choice.by_email) == (True, False, False)
    assert (
        "This job's own choice"
        in user_client.get(f"/jobs/{job.pk}/notifications/").content.decode()
    )
    _poll(cluster, "", "sacct.txt")
    assert mail.outbox == [] and not Notification.objects.exists()


def test_the_default_is_saved_on_the_settings_page(user_client, user):
    page = user_client.get("/jobs/notifications/settings/").content.decode()
    assert _ticked(page) == {"on_end", "on_failure", "on_idle_gpus", "by_email", "in_browser"}
    answer = user_client.post("/jobs/notifications/settings/", {"on_start": "on", "by_email": "on"})
    assert answer.status_code == 302
    saved = NotificationDefaults.objects.get(owner=user)
    assert (saved.on_start, saved.on_end, saved.by_email, saved.in_browser) == (
        True, False, True, False,
    )  # fmt: skip
    assert user_client.delete("/jobs/notifications/settings/").status_code == 405


def test_the_menu_links_the_list_and_the_settings(user_client):
    page = user_client.get("/").content.decode()
    assert 'hx-get="/jobs/notifications/count/"' in page
    assert 'href="/jobs/notifications/settings/"' in page
    assert "notify.js" in page


def test_another_user_sees_none_of_them(account, cluster, everything, client, django_user_model):
    job = _job(account, "32")
    _poll(cluster, "", "sacct.txt")
    assert Notification.objects.count() == 1
    client.force_login(django_user_model.objects.create_user("mallory", password="x"))
    assert "failed" not in client.get("/jobs/notifications/").content.decode()
    assert "unread" not in client.get("/jobs/notifications/count/").content.decode()
    assert _pushed(client) == []
    assert client.get(f"/jobs/{job.pk}/notifications/").status_code == 404
    assert client.post(f"/jobs/{job.pk}/notifications/", {"on_end": "on"}).status_code == 404
    assert not JobNotificationChoice.objects.exists()


def test_the_pages_need_a_login(client):
    for path in [
        "/jobs/notifications/",
        "/jobs/notifications/count/",
        "/jobs/notifications/settings/",
    ]:
        assert client.get(path).status_code == 302
    assert client.post("/jobs/notifications/new/").status_code == 302


def test_a_job_submitted_outside_the_portal_is_told_the_same(account, cluster, everything):
    job = _job(account, "32")
    Job.objects.filter(pk=job.pk).update(origin=JobOrigin.OUTSIDE)
    _poll(cluster, "", "sacct.txt")
    assert [m.subject for m in mail.outbox] == [f"[GPU portal] {job.name} failed: FAILED"]


def test_idle_gpus_are_told_once_with_the_warning(seeded, everything, user_client, settings):
    settings.GPU_WARMUP_SECONDS = 300
    job = resnet_job(everything.owner)
    add_samples(job, 0, 30.0)
    add_samples(job, 1, 0.0)
    for _ in range(2):
        refresh_warning(job)
        Job.objects.filter(pk=job.pk).update(gpu_warning="")  # gone, and back at the next poll
        job.refresh_from_db()
    refresh_warning(job)
    notify_mail.send_due()
    assert [m.subject for m in mail.outbox] == ["[GPU portal] resnet is not using its GPUs"]
    assert job.gpu_warning and job.gpu_warning in mail.outbox[0].body
    assert "GPUs idle" in Notification.objects.get().get_event_display()
    assert escape(job.gpu_warning) in user_client.get("/jobs/notifications/").content.decode()


def test_an_email_claimed_by_one_worker_is_not_sent_by_another(account, everything):
    job = _job(account, "32")
    notification = Notification.objects.create(
        owner=job.owner, job=job, event=NotifyEvent.FAILED, state=JobState.FAILED,
        email_status=EmailStatus.DUE,
    )  # fmt: skip
    assert notify_mail._claim(notification) is True
    assert notify_mail.send_due() == 0  # the other worker finds it taken
    assert notify_mail._claim(notification) is False
    assert mail.outbox == []


def test_a_mail_server_that_fails_is_tried_again_at_the_next_poll(
    account, cluster, everything, monkeypatch
):
    job = _job(account, "32")

    def refuse(*args, **kwargs):
        raise smtplib.SMTPServerDisconnected("connection closed")

    with monkeypatch.context() as patched:
        patched.setattr(notify_mail, "send_mail", refuse)
        _poll(cluster, "", "sacct.txt")
    notification = Notification.objects.get(job=job)
    assert (notification.email_status, notification.email_attempts) == (EmailStatus.DUE, 1)
    _poll(cluster, "", "sacct.txt")
    assert len(mail.outbox) == 1
    assert Notification.objects.get(job=job).email_status == EmailStatus.SENT


def test_a_user_without_an_address_still_has_the_list(account, cluster, user, user_client):
    NotificationDefaults.objects.create(owner=user, **EVERYTHING)
    _job(account, "32")
    _poll(cluster, "", "sacct.txt")
    assert mail.outbox == []
    assert Notification.objects.get().event == NotifyEvent.FAILED
    assert "failed: FAILED" in user_client.get("/jobs/notifications/").content.decode()


def test_the_per_job_form_is_loaded_into_the_job_page(account, user_client):
    job = _job(account, "32")
    page = user_client.get(f"/jobs/{job.pk}/").content.decode()
    assert f'hx-get="/jobs/{job.pk}/notifications/"' in page
    fragment = user_client.get(f"/jobs/{job.pk}/notifications/", HTTP_HX_REQUEST="true")
    assert (
        "<html" not in fragment.content.decode()
        and "Save for this job" in fragment.content.decode()
    )
    saved = user_client.post(
        f"/jobs/{job.pk}/notifications/", {"on_failure": "on"}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "Saved." in saved and "This job's own choice" in saved
    assert Job.objects.get(pk=job.pk).state == JobState.PENDING


def test_a_poll_cut_short_records_nothing_and_its_retry_records_once(
    account, cluster, everything, monkeypatch
):
    job = _job(account, "32")
    recorded = record.state_changes

    def cut_short(*args) -> None:
        recorded(*args)
        raise OperationalError("the database went away")  # after the rows, before the commit

    with monkeypatch.context() as patched:
        patched.setattr(record, "state_changes", cut_short)
        with pytest.raises(OperationalError):
            _poll(cluster, "", "sacct.txt")
    assert not Notification.objects.exists() and mail.outbox == []
    assert Job.objects.get(pk=job.pk).state == JobState.PENDING
    _poll(cluster, "", "sacct.txt")  # the task's retry
    _poll(cluster, "", "sacct.txt")
    assert [m.subject for m in mail.outbox] == [f"[GPU portal] {job.name} failed: FAILED"]


def test_admins_see_what_was_told_and_whether_it_was_sent(
    account, cluster, everything, staff_client
):
    job = _job(account, "32")
    _poll(cluster, "", "sacct.txt")
    page = staff_client.get("/admin/jobs/notification/").content.decode()
    assert job.name in page and "Sent" in page
    assert staff_client.get("/admin/jobs/notification/add/").status_code == 403


def test_the_settings_page_keeps_the_address_and_refuses_a_bad_one(user_client, user):
    answer = user_client.post("/jobs/notifications/settings/", {"email": "not an address"})
    assert answer.status_code == 200
    assert "Enter a valid email address." in answer.content.decode()
    assert not NotificationDefaults.objects.exists()
    user_client.post(
        "/jobs/notifications/settings/", {"email": "alice@example.org", "on_end": "on"}
    )
    user.refresh_from_db()
    assert user.email == "alice@example.org"
    assert (
        'value="alice@example.org"'
        in user_client.get("/jobs/notifications/settings/").content.decode()
    )
