"""The admins' GPU usage page: figures from Job and GpuDevice rows with known numbers."""

import re
from datetime import UTC, date, datetime, timedelta
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from guidance.models import Cluster, Policy
from jobs.gpu.usage import JobUse, Period, figures_of, summarize
from jobs.models import ClusterAccount, GpuDevice, Job, JobState, JobTask

# A past day, far enough back that "today" in any time zone comes after it.
DAY = datetime.now(UTC).date() - timedelta(days=10)
ONE_DAY = f"?start={DAY}&end={DAY}"


def at(hour: float, day: date = DAY) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(hours=hour)


@pytest.fixture(autouse=True)
def utc(settings):
    settings.TIME_ZONE = "UTC"


@pytest.fixture
def narval(seeded) -> Cluster:
    return Cluster.objects.get(slug="narval")


@pytest.fixture
def dgx(seeded) -> Cluster:
    return Cluster.objects.get(slug="dgx")


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user("bob", password="bob-password")


def _job(owner, cluster, started, ended, gpus, utilization, **fields) -> Job:
    account, _ = ClusterAccount.objects.get_or_create(
        owner=owner,
        cluster=cluster,
        defaults={
            "username": owner.username,
            "public_key": "ssh-ed25519 AAAA",
            "private_key_encrypted": "not used here",
        },
    )
    fields.setdefault("partition", "gpu-a100")
    fields.setdefault("gpu_type", "a100")
    return Job.objects.create(
        owner=owner,
        account=account,
        name=fields.pop("name", f"job-{Job.objects.count() + 1}"),
        script="#!/bin/bash\n",
        slurm_id=str(1000 + Job.objects.count()),
        state=JobState.COMPLETED if ended else JobState.RUNNING,
        started=started,
        ended=ended,
        gpus=gpus,
        gpu_utilization=utilization,
        **fields,
    )


def _devices(job: Job, *utilizations: float | None, task_id: str = "", mig: bool = False):
    for index, utilization in enumerate(utilizations):
        GpuDevice.objects.create(
            job=job,
            task_id=task_id,
            node="node-1",
            uuid=f"GPU-{job.pk}-{task_id}-{index}",
            index=index,
            mean_utilization=utilization,
            mig=mig,
        )


def text(response) -> str:
    """The page as a person reads it: tags gone, spaces collapsed."""
    html = response.content.decode()
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def table(response, table_id: str) -> list[list[str]]:
    html = response.content.decode()
    body = re.search(rf'<table id="{table_id}"[^>]*>(.*?)</table>', html, re.S)[1]
    rows = [row for row in re.findall(r"<tr>(.*?)</tr>", body, re.S) if "<td" in row]  # no headers
    cells = [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S) for row in rows]
    return [[" ".join(re.sub(r"<[^>]+>", " ", c).split()) for c in row] for row in cells]


def _busy_day(alice, bob, narval, dgx):
    """Known figures for DAY on narval, and one job on dgx and one outside the day."""
    a = _job(alice, narval, at(6), at(12), 4, 50.0, name="alice-a100")  # 24 GPU-h, 12 busy
    _devices(a, 0.0, mig=True)  # a MIG slice's utilization is unknown: not idle
    b = _job(alice, narval, at(0), at(24), 2, None, name="alice-unknown", partition="gpu-rtx",
             gpu_type="rtx")  # fmt: skip
    _devices(b, 0.0, 0.0)  # rows without a job mean: still unknown, never idle
    c = _job(bob, narval, at(12), at(18), 8, 10.0, name="bob-idle")  # 48 GPU-h, 4.8 busy
    _devices(c, 0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 40.0, 40.0)  # six idle for 6 h: 36 GPU-h
    # Started the evening before: only its 2 hours inside DAY count.
    _job(bob, narval, at(-2), at(2), 1, 100.0, name="bob-overnight")
    _job(bob, narval, at(-30), at(-26), 8, 5.0, name="bob-the-day-before")
    _job(bob, dgx, at(0), at(24), 8, 20.0, name="bob-on-dgx", partition="")
    return a, b, c


def test_anonymous_users_are_sent_to_log_in(client):
    response = client.get("/jobs/usage/")
    assert response.status_code == 302
    assert "login" in response["Location"] and "next=/jobs/usage/" in response["Location"]


def test_it_is_forbidden_to_users_who_are_not_staff(user_client):
    assert user_client.get("/jobs/usage/").status_code == 403
    assert "GPU usage" not in user_client.get("/jobs/").content.decode()


def test_staff_see_it_in_the_menu(staff_client, seeded):
    response = staff_client.get("/jobs/usage/")
    assert response.status_code == 200
    assert 'href="/jobs/usage/"' in response.content.decode()


def test_it_says_what_the_same_work_would_need_at_the_target(staff_client, user, bob, narval):
    # The guidance document's example: 71 GPUs at 35% would do the same work on 28 at 90%.
    for owner, gpus in [(user, 8)] * 4 + [(bob, 8)] * 3 + [(bob, 15)]:
        _job(owner, narval, at(-12), at(36), gpus, 35.0)  # runs past both ends of DAY
    response = staff_client.get(f"/jobs/usage/{ONE_DAY}")
    page = text(response)
    assert "71 GPUs allocated on average at 35%: the same work would fit on 28 at 90%." in page
    summary = dict(table(response, "summary"))
    assert summary["GPU-hours allocated"] == "1704.0"  # 71 x 24 h, clipped to the day
    assert summary["GPU-hours busy"] == "596.4"
    assert summary["GPUs in use on average"] == "71.0"
    assert summary["GPUs the same work would need at 90%"] == "28"
    assert summary["GPU-hours with unknown utilization"] == "0.0"


def test_it_breaks_the_figures_down(staff_client, user, bob, narval, dgx):
    _busy_day(user, bob, narval, dgx)
    response = staff_client.get(f"/jobs/usage/{ONE_DAY}&cluster=narval")
    assert response.status_code == 200
    summary = dict(table(response, "summary"))
    assert summary == {
        "Jobs": "4",
        "GPU-hours allocated": "122.0",  # 24 + 48 + 48 + 2
        "GPU-hours busy": "18.8",  # 12 + 4.8 + 2
        "Mean utilization": "25%",  # 18.8 of the 74 known GPU-hours
        "GPU-hours unused (allocated \u2212 busy)": "55.2",
        "GPU-hours on idle GPUs (under 1%)": "36.0",  # bob's six idle GPUs; not alice's unknown
        "GPU-hours with unknown utilization": "48.0",
        "GPUs in use on average": "5.1",
        "GPUs the same work would need at 90%": "1",
    }
    page = text(response)
    assert "3.1 GPUs allocated on average at 25%: the same work would fit on 1 at 90%." in page
    assert "Another 2 GPUs on average (48.0 GPU-hours) ran jobs without utilization samples" in page
    # user, jobs, GPU-hours allocated, GPU-hours busy, mean utilization
    assert [row[:5] for row in table(response, "by-user")] == [
        ["alice", "2", "72.0", "12.0", "50%"],
        ["bob", "2", "50.0", "6.8", "14%"],
    ]
    by_user = {row[0]: row for row in table(response, "by-user")}
    # idle, unknown, GPUs in use on average, GPUs needed at the target
    assert by_user["alice"][5:] == ["0.0", "48.0", "3.0", "0.6"]
    assert by_user["bob"][5:] == ["36.0", "0.0", "2.1", "0.3"]
    assert table(response, "by-partition") == [
        ["gpu-a100", "3", "74.0", "18.8", "25%", "36.0", "0.0", "3.1", "0.9"],
        ["gpu-rtx", "1", "48.0", "unknown", "unknown", "0.0", "48.0", "2.0", "unknown"],
    ]
    assert [row[4] for row in table(response, "by-gpu-type")] == ["25%", "unknown"]
    waste = table(response, "top-waste")
    assert [row[0].split()[0] for row in waste] == ["bob-idle", "alice-a100"]
    assert waste[0][1:] == ["bob", "Narval", "gpu-a100", "8", "6", "10%", "48.0", "43.2"]
    assert "bob-the-day-before" not in page and "bob-on-dgx" not in page


def test_all_clusters_name_the_cluster_of_each_partition(staff_client, user, bob, narval, dgx):
    _busy_day(user, bob, narval, dgx)
    response = staff_client.get(f"/jobs/usage/{ONE_DAY}")
    summary = dict(table(response, "summary"))
    assert (summary["Jobs"], summary["GPU-hours allocated"]) == ("5", "314.0")  # + 8 x 24 on dgx
    assert [row[0] for row in table(response, "by-partition")] == [
        "DGX cluster / unknown",
        "Narval / gpu-a100",
        "Narval / gpu-rtx",
    ]
    assert "All clusters" in text(response)


def test_each_cluster_has_its_own_target(staff_client, user, narval, dgx):
    Policy.objects.filter(cluster=dgx).update(utilization_target_percent=50)
    _job(user, narval, at(0), at(24), 9, 50.0)  # 4.5 GPUs' work: 5 at 90%
    _job(user, dgx, at(0), at(24), 4, 25.0)  # 1 GPU's work: 2 at 50%
    page = text(staff_client.get(f"/jobs/usage/{ONE_DAY}"))
    assert "13 GPUs allocated on average at 42%: the same work would fit on 7 at each" in page
    assert "each cluster's target (50%, 90%)." in page


def test_a_cluster_without_a_policy_aims_at_90_percent(staff_client, user, narval):
    Policy.objects.filter(cluster=narval).delete()
    _job(user, narval, at(0), at(24), 10, 45.0)
    page = text(staff_client.get(f"/jobs/usage/{ONE_DAY}&cluster=narval"))
    assert "10 GPUs allocated on average at 45%: the same work would fit on 5 at 90%." in page


def test_a_chain_counts_its_parts_runs_not_the_waits_between(staff_client, user, narval):
    chain = _job(user, narval, at(0), at(11), 2, 50.0, name="chain")
    JobTask.objects.create(job=chain, task_id="1", slurm_id="9_1", state="COMPLETED",
                           started=at(0), ended=at(2))  # fmt: skip
    JobTask.objects.create(job=chain, task_id="2", slurm_id="9_2", state="COMPLETED",
                           started=at(10), ended=at(11))  # fmt: skip
    _devices(chain, 0.0, 80.0, task_id="2")  # one GPU of the second part idled for its hour
    summary = dict(table(staff_client.get(f"/jobs/usage/{ONE_DAY}"), "summary"))
    assert summary["GPU-hours allocated"] == "6.0"  # 2 GPUs x (2 h + 1 h), not x 11 h
    assert summary["GPU-hours on idle GPUs (under 1%)"] == "1.0"


def test_a_running_job_counts_until_now(staff_client, user, narval):
    _job(user, narval, timezone.now() - timedelta(hours=2), None, 4, 60.0)
    response = staff_client.get("/jobs/usage/")
    today = timezone.localdate()
    page = response.content.decode()
    assert f'value="{today - timedelta(days=6)}"' in page and f'value="{today}"' in page
    summary = dict(table(response, "summary"))
    assert summary["GPU-hours allocated"] == "8.0"
    assert summary["GPU-hours busy"] == "4.8"


def test_only_unknown_utilization_is_not_a_comparison(staff_client, user, narval):
    job = _job(user, narval, at(0), at(24), 4, None)
    _devices(job, 0.0, 0.0, 0.0, 0.0)
    response = staff_client.get(f"/jobs/usage/{ONE_DAY}")
    page = text(response)
    assert "No job of this period has GPU utilization samples yet" in page
    summary = dict(table(response, "summary"))
    assert summary["Mean utilization"] == "unknown"
    assert summary["GPU-hours on idle GPUs (under 1%)"] == "0.0"
    assert summary["GPU-hours with unknown utilization"] == "96.0"
    assert table(response, "top-waste") == [
        ["No job with utilization samples left GPU-hours unused."]
    ]


def test_an_empty_period_says_so(staff_client, seeded):
    response = staff_client.get(f"/jobs/usage/{ONE_DAY}")
    assert response.status_code == 200
    assert "No GPU job ran in this period." in text(response)


@pytest.mark.parametrize(
    "query, message",
    [
        ("?start=2026-02-30", "Enter the first day as YYYY-MM-DD."),
        ("?end=yesterday", "Enter the last day as YYYY-MM-DD."),
        (f"?start={DAY}&end={DAY - timedelta(days=1)}", "The first day comes after the last"),
        (f"?start={DAY - timedelta(days=400)}&end={DAY}", "Choose at most 366 days."),
        ("?cluster=nowhere", "There is no cluster “nowhere”: choose one."),
    ],
)
def test_bad_input_gets_a_clear_message(staff_client, seeded, query, message):
    response = staff_client.get(f"/jobs/usage/{query}")
    assert response.status_code == 400
    assert message in text(response)


def test_a_future_period_is_refused(staff_client, seeded):
    later = datetime.now(UTC).date() + timedelta(days=3)
    response = staff_client.get(f"/jobs/usage/?start={later}&end={later}")
    assert response.status_code == 400
    assert "The period starts in the future" in text(response)


def test_the_wasteful_jobs_link_to_the_admins_job_page(staff_client, staff, bob, narval):
    own = _job(staff, narval, at(0), at(4), 4, 10.0, name="staff-job")
    other = _job(bob, narval, at(0), at(4), 4, 20.0, name="bob-job")
    page = staff_client.get(f"/jobs/usage/{ONE_DAY}").content.decode()
    assert f"/admin/jobs/job/{own.pk}/change/" in page
    assert f"/admin/jobs/job/{other.pk}/change/" in page
    job_page = staff_client.get(f"/admin/jobs/job/{other.pk}/change/").content.decode()
    assert "bob-job" in job_page and 'name="_save"' not in job_page  # to read, not to change


def test_its_queries_do_not_grow_with_the_jobs(staff_client, user, bob, narval, dgx):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert staff_client.get(f"/jobs/usage/{ONE_DAY}").status_code == 200
        return len(queries)

    _busy_day(user, bob, narval, dgx)
    few = count()
    for hour in range(20):
        job = _job(bob, narval, at(hour), at(hour + 1), 2, 30.0, partition=f"p{hour}")
        _devices(job, 0.0, 50.0)
    assert count() == few


# The arithmetic alone


def _use(**fields) -> JobUse:
    defaults = dict(
        pk=1, name="j", slurm_id="1", owner="alice", cluster="Narval", partition="p",
        gpu_type="a100", gpus=4, utilization=50.0, target_percent=90,
        runs={"": (at(-1), at(3))},
    )  # fmt: skip
    return JobUse(**{**defaults, **fields})


PERIOD = Period(at(0), at(24))


def test_a_run_counts_only_inside_the_period():
    assert PERIOD.hours == 24
    assert PERIOD.hours_of(at(-1), at(3)) == 3
    assert PERIOD.hours_of(at(-5), at(-1)) == 0
    assert PERIOD.hours_of(at(23), at(30)) == 1


def test_a_jobs_figures():
    figures = figures_of(_use(idle_gpus={"": 1}), PERIOD)
    assert (figures.allocated, figures.busy, figures.idle, figures.unused) == (12, 6, 3, 6)
    assert figures.at_target == pytest.approx(6 / 0.9)
    assert figures.utilization == 50


def test_unknown_utilization_is_neither_busy_nor_idle():
    figures = figures_of(_use(utilization=None, idle_gpus={"": 4}), PERIOD)
    assert (figures.allocated, figures.known, figures.busy, figures.idle) == (12, 0, 0, 0)
    assert figures.unknown == 12 and figures.utilization is None


def test_idle_hours_never_exceed_the_unused_ones():
    # Four idle GPUs but a mean of 50%: the rows were saved at different moments.
    figures = figures_of(_use(idle_gpus={"": 4}), PERIOD)
    assert figures.idle == figures.unused == 6


def test_an_idle_gpu_of_an_unknown_task_counts_for_a_mean_part():
    runs = {"1": (at(0), at(2)), "2": (at(4), at(8))}
    figures = figures_of(_use(utilization=10.0, runs=runs, idle_gpus={"1": 1, "9": 1}), PERIOD)
    assert figures.allocated == 4 * 6
    assert figures.idle == 2 + 3  # task 1's 2 hours, and the mean of the parts' 2 and 4


def test_the_report_rounds_the_gpus_needed_up_but_not_past_a_whole_number():
    jobs = [_use(pk=n, gpus=9, utilization=50.0, runs={"": (at(0), at(24))}) for n in (1, 2)]
    report = summarize(jobs, PERIOD)
    assert report.gpus_in_use == 18
    assert report.gpus_needed == 10  # exactly 10.0, not 11
    doc = summarize([_use(gpus=71, utilization=35.0, runs={"": (at(0), at(24))})], PERIOD)
    assert (doc.gpus_in_use, doc.gpus_needed) == (71, 28)


# -- GPU-hours requested and energy -------------------------------------------------------------


def total(response, table_id: str) -> list[str]:
    html = response.content.decode()
    body = re.search(rf'<table id="{table_id}"[^>]*>.*?<tr class="total">(.*?)</tr>', html, re.S)[1]
    return [
        " ".join(re.sub(r"<[^>]+>", " ", c).split())
        for c in re.findall(r"<td[^>]*>(.*?)</td>", body, re.S)
    ]


def test_the_usage_view_gives_gpu_hours_requested_used_and_energy_per_user_and_cluster(
    staff_client, user, bob, narval, dgx
) -> None:
    # alice: 4 GPUs for 6 of 12 h asked, 1.2 kWh; 2 GPUs all day of 24 h asked, energy unknown.
    _job(user, narval, at(6), at(12), 4, 50.0, time_limit_seconds=12 * 3600,
         gpu_energy_j=1.2 * 3_600_000)  # fmt: skip
    _job(user, narval, at(0), at(24), 2, 40.0, time_limit_seconds=24 * 3600)
    # bob on dgx: 1 GPU from the evening before: half its run (and energy) falls in the day.
    _job(bob, dgx, at(-2), at(2), 1, 90.0, time_limit_seconds=8 * 3600,
         gpu_energy_j=0.4 * 3_600_000)  # fmt: skip
    response = staff_client.get(f"/jobs/usage/{ONE_DAY}")
    assert response.status_code == 200
    # user, jobs, requested, used, used of requested, kWh, GPU-hours with energy unknown
    assert table(response, "energy-by-user") == [
        ["alice", "2", "96.0", "72.0", "75%", "1.200", "48.0"],
        ["bob", "1", "4.0", "2.0", "50%", "0.200", "0.0"],
    ]
    assert total(response, "energy-by-user") == [
        "All",
        "3",
        "100.0",
        "74.0",
        "74%",
        "1.400",
        "48.0",
    ]
    assert table(response, "energy-by-cluster") == [
        ["Narval", "2", "96.0", "72.0", "75%", "1.200", "48.0"],
        ["DGX cluster", "1", "4.0", "2.0", "50%", "0.200", "0.0"],
    ]
    page = text(response)
    assert "GPU-hours requested, used and energy" in page and "unknown, not 0" in page


def test_the_usage_view_says_unknown_energy_not_zero(staff_client, user, narval) -> None:
    _job(user, narval, at(0), at(10), 1, 40.0)  # no time limit, no energy reported
    rows = table(staff_client.get(f"/jobs/usage/{ONE_DAY}&cluster=narval"), "energy-by-cluster")
    assert rows[0] == ["Narval", "1", "unknown", "10.0", "unknown", "unknown", "10.0"]
