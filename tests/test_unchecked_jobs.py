# A job no poll has read for more than three poll periods shows as stale, with the time of its
# last good poll, whatever kept the polls away; a login's back-off moves that moment, a job that
# has ended never goes stale, and the owner opening the page restarts the count.

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import polling
from jobs.models import ClusterAccount, Job, JobState
from tests.test_job_pages import _account

PERIOD = 10

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def period(settings):
    settings.POLL_SECONDS, settings.POLL_MAX_SECONDS = PERIOD, 6 * PERIOD


@pytest.fixture
def job(user, seeded):
    from guidance.models import Cluster

    account = _account(user, Cluster.objects.get(slug="narval"))
    return Job.objects.create(
        owner=user, account=account, name="resnet", script="true\n", slurm_id="77",
        state=JobState.RUNNING, submitted=timezone.now(),
    )  # fmt: skip


def _last_polled(job: Job, seconds_ago: float, poll_after_in: float | None = None) -> Job:
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(polled=now - timedelta(seconds=seconds_ago))
    after = None if poll_after_in is None else now + timedelta(seconds=poll_after_in)
    ClusterAccount.objects.filter(pk=job.account_id).update(poll_after=after)
    return Job.objects.select_related("account").get(pk=job.pk)


@pytest.mark.parametrize(("seconds_ago", "stale"), [(5, False), (29, False), (31, True)])
def test_it_goes_stale_three_periods_after_its_last_good_poll(job, seconds_ago, stale):
    assert _last_polled(job, seconds_ago).looks_stale is stale


def test_a_backed_off_login_goes_stale_two_periods_after_its_poll_was_due(job):
    # Polled 50 s ago, its next poll due in 10 s (a 60 s back-off): fresh until 20 s after that.
    assert not _last_polled(job, 50, poll_after_in=10).looks_stale
    assert not _last_polled(job, 75, poll_after_in=-15).looks_stale
    assert _last_polled(job, 85, poll_after_in=-25).looks_stale


def test_an_ended_job_is_never_stale_for_want_of_polls(job):
    Job.objects.filter(pk=job.pk).update(state=JobState.COMPLETED)
    assert not _last_polled(job, 3600).looks_stale


def test_its_owner_opening_the_page_gives_the_polls_two_periods_before_it_shows_stale(
    user_client, job
):
    # Backed off: polled 50 s ago, the next poll due in 10 s. The owner looks: due now.
    _last_polled(job, 50, poll_after_in=10)
    page = user_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "has not checked" not in page
    # No poll came for three periods since: the page says so, with the last good poll's time.
    account = ClusterAccount.objects.get(pk=job.account_id)
    assert account.poll_after <= timezone.now()
    last = _last_polled(job, 80, poll_after_in=-30).polled
    page = user_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "The portal has not checked this job since" in page
    assert timezone.localtime(last).strftime("%Y-%m-%d %H:%M:%S") in page
    listed = user_client.get("/jobs/").content.decode()
    assert ">stale</span>" in listed


def test_the_api_calls_it_stale_and_says_when_it_was_last_read(client, secret, job):
    last = _last_polled(job, 45).polled
    answer = client.get(f"/api/v1/jobs/{job.pk}", headers={"Authorization": f"Bearer {secret}"})
    assert answer.status_code == 200
    body = answer.json()
    assert body["stale"] is True
    assert body["polled"].startswith(last.isoformat()[:19])


def test_a_wake_leaves_a_login_already_due_untouched(job):
    past = timezone.now() - timedelta(seconds=5)
    ClusterAccount.objects.filter(pk=job.account_id).update(poll_after=past, quiet_polls=0)
    polling.wake(pk=job.account_id)
    assert ClusterAccount.objects.get(pk=job.account_id).poll_after == past
