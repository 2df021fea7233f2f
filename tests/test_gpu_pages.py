"""The job page's GPU use: the chart, live warnings, the efficiency report and the next run."""

import re
from datetime import timedelta

import pytest
from django.utils.html import strip_tags

from jobs.gpu import chart
from jobs.models import Composition, Job, JobState, SampleFile
from tests.test_compose_page import GOOD
from tests.test_efficiency import add_samples, resnet_job
from tests.test_job_pages import _account, stranger_client  # noqa: F401  (a fixture)

HX = {"HX-Request": "true"}


@pytest.fixture
def job(user, seeded, settings):
    settings.GPU_WARMUP_SECONDS = 300
    job = resnet_job(user, composition=True)
    add_samples(job, 0, 30.0)
    add_samples(job, 1, 0.0)
    return job


def _end(job: Job) -> Job:
    job.state = JobState.COMPLETED
    job.ended = job.started + timedelta(hours=1)
    job.elapsed_seconds, job.time_limit_seconds = 3600, 4 * 3600
    job.cpu_seconds, job.max_rss_mb, job.requested_memory_mb = 3600 * 3, 8000, 32000
    job.save()
    return job


def _page(client, job) -> str:
    response = client.get(f"/jobs/{job.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def test_the_chart_has_one_series_per_gpu(user_client, job):
    page = _page(user_client, job)
    svg = re.search(r'<svg class="gpu-chart".*?</svg>', page, re.S).group(0)
    assert svg.count('class="gpu-series"') == 2
    assert svg.count('class="utilization"') == 2 and svg.count('class="memory"') == 2
    assert '<title id="gpu-chart-title">GPU use of resnet</title>' in svg
    assert "GPU 0 on a100-2: 30% busy on average, peak memory 12.0 of 80 GB." in svg
    assert "GPU 1 on a100-2: 0% busy on average" in svg
    assert "<caption>Each GPU over the whole run so far</caption>" in page
    table = strip_tags(re.search(r'<table class="gpu-table".*?</table>', page, re.S)[0])
    assert "12.0 GB of 80 GB" in table and "0.4 GB of 80 GB" in table


def test_the_running_job_shows_the_warnings_with_their_sources(user_client, job):
    page = _page(user_client, job)
    assert "GPU 1 on a100-2 has done nothing for 55 minutes" in page
    assert "Your 2 GPUs are 15% busy on average; the cluster asks for more than 90%." in page
    assert "num_workers=6 in each GPU&#x27;s process (12 CPUs for 2 GPUs)" in page
    assert "pin_memory=True" in page and "torch.autocast" in page
    assert "Ask for 1 GPU instead of 2" in page
    # The source is the document's title, linked to the portal's copy (seeded imports it).
    assert (
        '<span class="source">Source: <a href="/guidance/documents/003_c24777732a429f30/'
        '#dgx-cluster-guidelines">DGX cluster guidelines</a></span>' in page
    )
    assert "Efficiency report" not in page  # not before the job ends


def test_no_warning_during_the_warm_up(user_client, job, settings):
    settings.GPU_WARMUP_SECONDS = 2 * 3600
    page = _page(user_client, job)
    assert "has done nothing" not in page and "busy on average;" not in page
    assert "Warnings start after the first 120 minutes" in page


def test_a_mig_slice_shows_as_unknown(user_client, job):
    job.gpu_devices.all().delete()
    add_samples(job, 0, None, mig=True, name="MIG 3g.40gb")
    page = _page(user_client, job)
    assert "has done nothing" not in page
    assert "MIG slice: NVIDIA reports no compute utilization" in page
    assert 'class="unknown"' in page and ">unknown</text>" in page


def test_the_sampler_note_is_shown(user_client, job):
    SampleFile.objects.create(
        job=job, node="a100-3", path="portal-jobs/resnet/gpu-a100-3.tsv", note="no NVML here"
    )
    assert "could not sample on a100-3: no NVML here" in _page(user_client, job)


def test_the_fragment_refreshes_until_the_job_ends(user_client, job):
    response = user_client.get(f"/jobs/{job.pk}/gpus/", headers=HX)
    page = response.content.decode()
    assert response.status_code == 200
    assert page.lstrip().startswith('<section id="job-gpus"')
    assert 'hx-trigger="every 10s"' in page and "<html" not in page
    _end(job)
    response = user_client.get(f"/jobs/{job.pk}/gpus/", headers=HX)
    assert response.status_code == 286
    assert "Efficiency report" in response.content.decode()


def test_a_job_that_never_ran_shows_no_gpu_section(user_client, job):
    job.gpu_devices.all().delete()
    job.state, job.started = JobState.SUBMIT_FAILED, None
    job.save()
    assert 'id="job-gpus"' not in _page(user_client, job)


def test_the_report_after_the_job_ends(user_client, job):
    page = _page(user_client, _end(job))
    assert "Efficiency report" in page
    assert "15% on average" in page and "GPU 0 on a100-2: 30%; GPU 1 on a100-2: 0%." in page
    assert "Under the 90% target 100% of the sampled time." in page
    assert "peak 12.0 GB" in page and "of the card's 80 GB" in page
    text = strip_tags(page)  # the figures are in spans that keep each on one line
    assert "25.0%" in text and "3:00:00 of 12:00:00 core-walltime (12 CPUs \u00d7 1:00:00)" in text
    assert "8000 MB of 32000 MB requested" in text
    assert "ran 1:00:00 of 4:00:00" in text
    assert "--time=1:15:00 instead of 4:00:00" in page
    assert "1 GPU instead of 2" in page
    assert "Save as the next run" in page
    assert "While it ran:" in page and "<caption>Each GPU over the whole run</caption>" in page


def test_the_next_run_gets_fewer_gpus_less_time_and_less_memory(user_client, job, user):
    _end(job)
    response = user_client.post(f"/jobs/{job.pk}/next-run/")
    new = Composition.objects.exclude(pk=job.composition.pk).get()
    assert response.status_code == 302 and response["Location"] == new.get_absolute_url()
    assert new.owner == user and new.name == "resnet (next run)"
    assert (new.fields["gpu_count"], new.fields["hours"]) == ("1", "1.25")
    assert new.fields["memory"] == "10240M"  # used 8,000 of 32,000 MB: set by hand
    assert new.fields["command"] == GOOD["command"]
    assert "#SBATCH --time=0-01:15:00" in new.script
    assert "#SBATCH --mem=10240M" in new.script
    assert re.search(r"#SBATCH --gres=gpu:\w+:1\n", new.script)
    page = user_client.get(response["Location"]).content.decode()
    changes = (
        "--time=1:15:00 instead of 4:00:00, --mem=10240M instead of 32000M, 1 GPU instead of 2"
    )
    assert f"with {changes}" in page


def test_a_hand_edited_composition_goes_to_the_composer(user_client, job):
    job.composition.edited = True
    job.composition.save()
    response = user_client.post(f"/jobs/{_end(job).pk}/next-run/")
    assert response.status_code == 302
    assert response["Location"].startswith("/jobs/new/?")
    assert "gpu_count=1" in response["Location"] and "hours=1.25" in response["Location"]
    assert Composition.objects.count() == 1


def test_a_job_without_a_composition_is_told_so(user_client, job):
    job.composition.delete()
    job.refresh_from_db()
    page = _page(user_client, _end(job))
    assert "This job has no composition in the portal" in page
    response = user_client.post(f"/jobs/{job.pk}/next-run/", follow=True)
    assert "This job has no composition in the portal" in response.content.decode()
    assert not Composition.objects.exists()


def test_another_user_gets_404(stranger_client, job):  # noqa: F811
    assert stranger_client.get(f"/jobs/{job.pk}/gpus/").status_code == 404
    assert stranger_client.get(f"/jobs/{job.pk}/gpus/", headers=HX).status_code == 404
    assert stranger_client.post(f"/jobs/{_end(job).pk}/next-run/").status_code == 404
    assert Composition.objects.count() == 1


def test_next_run_rejects_get(user_client, job):
    assert user_client.get(f"/jobs/{job.pk}/next-run/").status_code == 405


def test_the_list_shows_a_badge_for_a_warning(user_client, job):
    assert "GPUs under-used" not in user_client.get("/jobs/").content.decode()
    job.gpu_warning = "GPU 1 on a100-2 has done nothing for 55 minutes."
    job.save()
    page = user_client.get("/jobs/").content.decode()
    assert 'title="GPU 1 on a100-2 has done nothing for 55 minutes."' in page
    assert "GPUs under-used" in page


# --- The chart alone ----------------------------------------------------------------------


def _points(values, seconds=10.0, start=0.0):
    return [
        chart.Point(start + seconds * (i + 1), seconds, v, 1000.0 if v is not None else None)
        for i, v in enumerate(values)
    ]


def test_unknown_utilization_is_a_gap_not_zero():
    series = chart.Series("GPU 0 on n1", tuple(_points([50, 50, None, None, 50])), 2000.0)
    svg = str(chart.render([series], title="t", duration=50))
    utilization = re.search(r'class="utilization" d="([^"]+)"', svg).group(1)
    assert utilization.count("M") == 2  # lifted over the unknown stretch
    assert '<rect class="unknown"' in svg
    assert " 0.0" not in utilization.split("M")[1]  # never drawn as 0%


def test_a_gap_in_time_breaks_the_line():
    points = _points([40, 40]) + _points([40, 40], start=300)
    svg = str(chart.render([chart.Series("g", tuple(points))], title="t"))
    assert re.search(r'class="utilization" d="([^"]+)"', svg).group(1).count("M") == 2


def test_labels_are_escaped():
    series = chart.Series("<script>", tuple(_points([1])), name="a&b")
    svg = str(chart.render([series], title="<b>"))
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "<b>" not in svg


def test_long_runs_are_downsampled_with_time_weighted_means():
    points = _points([100, 0] * 1000)  # 2000 samples
    fewer = chart.downsample(points, 100)
    assert len(fewer) == 100
    assert all(p.utilization == pytest.approx(50) for p in fewer)
    assert sum(p.seconds for p in fewer) == pytest.approx(20000)
    mixed = chart.downsample(_points([None, 80] * 200), 10)
    assert all(p.utilization == pytest.approx(80) for p in mixed)  # unknown is not 0
