"""A sweep followed as one: its runs on the job page and in the API (values, states, exit codes,
times, nodes, outliers), sorted by any column, and "Re-run failed runs" making a job that runs
only those, once per key. Built from composed sweep scripts, the poller's task rows and a
runs.tsv's text: no Slurm."""

import re
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from guidance.models import Cluster
from jobs.cluster import tracking
from jobs.cluster.remote import RUNS_CAP, RUNS_PROBE, Snapshot
from jobs.compose.forms import ComposeForm
from jobs.compose.from_form import compose
from jobs.compose.sweep_script import runs_in, with_only
from jobs.models import GpuDevice, Job, JobState, JobTask, RunsTable
from jobs.runs import reading
from jobs.runs.table import array_numbers, lines_of, results_folder
from jobs.slurm.sacct import parse_sacct
from tests.test_api_jobs import _auth, _errors, stranger  # noqa: F401  (the imported fixture)
from tests.test_job_pages import _account

SWEEP = {
    "cluster": "narval",
    "job_name": "sweep1",
    "workload": "training",
    "dataset_gb": "2",
    "file_count": "100",
    "data_path": "$HOME/data/set",
    "gpu_count": "1",
    "nodes": "1",
    "similar_runs": "1",
    "sweep_grid": "lr = 0.1, 0.01\nseed = 1 2 3",
    "command": "python train.py --lr {lr} --seed {seed}",
    "environment": "none",
    "results_dir": "$HOME/results",
}
HEADER = "run\tfolder\tlr\tseed\texit_code\telapsed_s\tjob\tnode"


def sweep_script(hours: str) -> str:
    """The composer's script for six runs: an array task each at an hour a run, grouped in one
    job at six minutes."""
    form = ComposeForm(SWEEP | {"hours": hours})
    composed = compose(form)
    assert composed is not None and composed.script, form.errors
    return composed.script


_composed: dict[str, str] = {}


@pytest.fixture
def scripts(seeded) -> dict[str, str]:
    # Composed once: the seeded guidance is the same in every test.
    if not _composed:
        _composed.update(array=sweep_script("1"), grouped=sweep_script("0.1"))
    assert "#SBATCH --array=1-6" in _composed["array"]
    assert 'SWEEP_RUNS="1 2 3 4 5 6"' in _composed["grouped"]
    return _composed


@pytest.fixture
def account(user, seeded):
    return _account(user, Cluster.objects.get(slug="narval"))


def _job(user, account, script, **fields) -> Job:
    values = {"name": "sweep1", "slurm_id": "500", "state": JobState.RUNNING} | fields
    return Job.objects.create(owner=user, account=account, script=script, **values)


def _task(job, number, state, exit_code=None, seconds=None, node="") -> JobTask:
    ended = timezone.now() - timedelta(minutes=5)
    started = ended - timedelta(seconds=seconds) if seconds is not None else None
    return JobTask.objects.create(
        job=job,
        task_id=str(number),
        slurm_id=f"{job.slurm_id}_{number}",
        state=state,
        exit_code=exit_code,
        started=started,
        ended=ended if state in JobState.final() else None,
        nodes=node,
    )


def _table(job, lines: list[str], read_at=None) -> RunsTable:
    # Read after the job ended (and just now): the page does not ask the cluster again.
    text = "\n".join([HEADER, *lines]) + "\n"
    return RunsTable.objects.create(job=job, text=text, read_at=read_at or timezone.now())


def _line(number, lr, seed, code, seconds, job, node="ng101") -> str:
    folder = f"run-{number:03d}_lr-{lr}_seed-{seed}"
    return f"{number}\t{folder}\t{lr}\t{seed}\t{code}\t{seconds}\t{job}\t{node}"


def _rows(page: str) -> list[int]:
    return [int(n) for n in re.findall(r'data-run="(\d+)"', page)]


def _row(page: str, number: int) -> str:
    return re.search(rf'data-run="{number}">(.*?)</tr>', page, re.S).group(1)


@pytest.fixture
def stranger_client(django_user_model):
    client = Client()
    client.force_login(django_user_model.objects.create_user("mallory", password="x"))
    return client


# --- An array: a task per run ----------------------------------------------------------------


@pytest.fixture
def array_job(user, account, scripts) -> Job:
    job = _job(user, account, scripts["array"])
    _task(job, 1, JobState.COMPLETED, 0, seconds=600, node="ng101")
    _task(job, 2, JobState.FAILED, 1, seconds=30, node="ng102")
    _task(job, 3, JobState.RUNNING, seconds=120, node="ng103")
    return job


def test_an_arrays_runs_show_their_tasks(user_client, array_job):
    GpuDevice.objects.create(
        job=array_job, task_id="1", node="ng101", uuid="GPU-1", mean_utilization=87
    )
    page = user_client.get(f"/jobs/{array_job.pk}/").content.decode()
    assert "<h2>Runs</h2>" in page
    assert "6 runs: 1 completed, 1 failed, 1 running, 3 waiting" in page
    assert _rows(page) == [1, 2, 3, 4, 5, 6]
    first, second, fourth = _row(page, 1), _row(page, 2), _row(page, 4)
    assert "<td>0.1</td><td>1</td>" in first and "Completed" in first and "0:10:00" in first
    assert "ng101" in first and "87%" in first
    assert "<td>0.1</td><td>2</td>" in second and "Failed" in second and "ng102" in second
    assert "<td>0.01</td><td>1</td>" in fourth and "Pending" in fourth
    # Each started run's own output file, the task's slurm-%A_%a.out.
    assert f"/jobs/{array_job.pk}/output/?stream=out&amp;task=2" in second
    assert "portal-jobs/sweep1/slurm-500_2.out" in second
    assert "Failed: run 2 (lr=0.1 seed=2), exit code 1." in page
    # Still running: the table refreshes itself, and nothing can be re-run yet.
    assert f'hx-get="/jobs/{array_job.pk}/runs/?sort=run" hx-trigger="every 10s"' in page
    assert "Re-run failed runs" not in page


def test_a_runs_own_line_says_how_it_ended(user_client, array_job):
    array_job.state = JobState.FAILED
    array_job.ended = timezone.now() - timedelta(minutes=10)
    array_job.save()
    JobTask.objects.filter(job=array_job, task_id="3").update(
        state=JobState.COMPLETED, exit_code=0, ended=array_job.ended
    )
    # Run 3's task ended with 0, but the run wrote 2: its program failed, the copy back ran.
    _table(
        array_job, [_line(3, "0.1", 3, 2, 580, "500_3", "ng109"), _line(1, "0.1", 1, 0, 7, "499")]
    )
    page = user_client.get(f"/jobs/{array_job.pk}/").content.decode()
    third = _row(page, 3)
    assert "Failed" in third and ">2</td>" in third and "0:09:40" in third
    # The node as Slurm names it (the poll's), not the hostname the run wrote.
    assert "ng103" in third and "ng109" not in third
    # Another job's line (the same sweep submitted before, into the same folder) is not this run's.
    assert "0:10:00" in _row(page, 1)


def test_the_runs_sort_by_any_column(user_client, array_job):
    url = f"/jobs/{array_job.pk}/runs/"
    headers = {"HX-Request": "true"}
    by_time = user_client.get(url, {"sort": "-elapsed"}, headers=headers).content.decode()
    assert _rows(by_time)[:3] == [1, 3, 2]  # the runs with no time yet come last
    assert 'aria-sort="descending"' in by_time and "?sort=elapsed" in by_time
    by_lr = user_client.get(url, {"sort": "param:lr"}, headers=headers).content.decode()
    assert _rows(by_lr) == [4, 5, 6, 1, 2, 3]  # 0.01 before 0.1, as numbers
    # Without JavaScript a header is a link to the whole page, sorted.
    page = user_client.get(f"/jobs/{array_job.pk}/", {"sort": "-run"}).content.decode()
    assert _rows(page) == [6, 5, 4, 3, 2, 1]
    unknown = user_client.get(url, {"sort": "nonsense"}, headers=headers).content.decode()
    assert _rows(unknown) == [1, 2, 3, 4, 5, 6]


def test_the_runs_table_stops_refreshing_when_the_sweep_ends(user_client, array_job):
    array_job.state, array_job.ended = JobState.FAILED, timezone.now() - timedelta(hours=1)
    array_job.save()
    _table(array_job, [])
    response = user_client.get(f"/jobs/{array_job.pk}/runs/", headers={"HX-Request": "true"})
    assert response.status_code == 286


def test_another_user_sees_no_runs(stranger_client, array_job):
    for url in (f"/jobs/{array_job.pk}/", f"/jobs/{array_job.pk}/runs/"):
        assert stranger_client.get(url).status_code == 404
    assert stranger_client.post(f"/jobs/{array_job.pk}/rerun-failed/").status_code == 404
    assert Job.objects.count() == 1


def test_the_poll_keeps_the_node_each_task_ran_on(user, account):
    job = _job(user, account, "#!/bin/bash\n", slurm_id="35", state=JobState.PENDING)
    sacct = (Path(__file__).parent / "slurm_output" / "sacct.txt").read_text()
    ended = "2026-11-22T04:08:15|a100-1|"  # task 2's end and node
    sacct = sacct.replace(ended, "2026-11-22T04:08:15|a100-7|")
    tracking.apply(Snapshot([], parse_sacct(sacct)), [job])
    nodes = dict(job.tasks.values_list("task_id", "nodes"))
    assert nodes == {"1": "a100-1", "2": "a100-7", "3": "a100-1"}


def test_a_task_that_has_not_started_has_no_output_to_read(user_client, array_job):
    page = user_client.get(f"/jobs/{array_job.pk}/output/", {"task": "6"}).content.decode()
    assert "no array task 6 that has started" in page


# --- Grouped: runs one after another in one job ----------------------------------------------


GROUPED_LINES = [
    _line(1, "0.1", 1, 0, 300, "700"),
    _line(2, "0.1", 2, 0, 310, "700"),
    _line(3, "0.1", 3, 0, 900, "700"),
    _line(4, "0.01", 1, 3, 20, "700"),
    _line(5, "0.01", 2, 0, 290, "700"),
]


@pytest.fixture
def grouped_job(user, account, scripts) -> Job:
    ended = timezone.now() - timedelta(minutes=10)
    job = _job(
        user, account, scripts["grouped"], slurm_id="700", state=JobState.TIMEOUT, ended=ended
    )
    job.started = ended - timedelta(minutes=40)
    job.gpus = 1
    job.save()
    _table(job, GROUPED_LINES)
    return job


def test_grouped_runs_read_their_own_lines(user_client, grouped_job):
    page = user_client.get(f"/jobs/{grouped_job.pk}/").content.decode()
    # Run 6 had not written its line when the job reached its time limit.
    assert "6 runs: 4 completed, 2 failed, 0 running, 0 waiting" in page
    assert "0.51 GPU-hours used" in page  # 1820 s of runs on one GPU
    assert "Failed: run 4 (lr=0.01 seed=1), exit code 3; run 6 (lr=0.01 seed=3), timed out." in page
    assert "Slow (over twice the median time): run 3 (lr=0.1 seed=3), 0:15:00." in page
    assert "Fast (under half the median time): run 4 (lr=0.01 seed=1), 0:00:20." in page
    assert "Timed out" in _row(page, 6)
    # A grouped run's output is its job's.
    assert "portal-jobs/sweep1/slurm-700.out" in _row(page, 2) and "task=" not in _row(page, 2)
    assert "Re-run failed runs (2)" in page


def test_a_grouped_job_runs_its_runs_in_turn(user_client, account, user, scripts):
    job = _job(user, account, scripts["grouped"], slurm_id="800")
    _table(job, [_line(1, "0.1", 1, 0, 300, "800"), _line(2, "0.1", 2, 1, 310, "800")])
    page = user_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "6 runs: 1 completed, 1 failed, 1 running, 3 waiting" in page
    assert "Running" in _row(page, 3) and "Pending" in _row(page, 4)
    # Still running: no re-run before the sweep has finished.
    assert "Re-run failed runs" not in page


def test_a_job_that_is_not_a_sweep_has_no_runs(user_client, account, user):
    job = _job(user, account, "#!/bin/bash\necho hi\n", state=JobState.FAILED)
    page = user_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "<h2>Runs</h2>" not in page
    response = user_client.post(f"/jobs/{job.pk}/rerun-failed/", follow=True)
    assert "not a sweep" in response.content.decode()
    assert Job.objects.count() == 1


# --- Re-run failed runs ----------------------------------------------------------------------


def test_the_failed_runs_of_an_array_run_again_alone(user_client, array_job):
    array_job.state, array_job.ended = JobState.FAILED, timezone.now() - timedelta(hours=1)
    array_job.save()
    JobTask.objects.filter(job=array_job, task_id="3").update(state=JobState.COMPLETED, exit_code=0)
    _task(array_job, 4, JobState.COMPLETED, 0, seconds=500)
    _task(array_job, 5, JobState.OUT_OF_MEMORY, 0, seconds=40)
    _task(array_job, 6, JobState.COMPLETED, 0, seconds=520)
    _table(array_job, [])
    page = user_client.get(f"/jobs/{array_job.pk}/").content.decode()
    key = re.search(r'name="submission_key" value="(\w+)"', page).group(1)
    response = user_client.post(f"/jobs/{array_job.pk}/rerun-failed/", {"submission_key": key})
    again = Job.objects.exclude(pk=array_job.pk).get()
    assert response.url == f"/jobs/{again.pk}/"
    assert again.rerun_of == array_job and again.name == array_job.name
    assert again.account == array_job.account and again.state == JobState.SUBMITTING
    assert "#SBATCH --array=2,5\n" in again.script
    assert again.script.replace("--array=2,5", "--array=1-6") == array_job.script
    # The same form sent again (a double click) makes no second job.
    user_client.post(f"/jobs/{array_job.pk}/rerun-failed/", {"submission_key": key})
    assert Job.objects.count() == 2
    new_page = user_client.get(f"/jobs/{again.pk}/").content.decode()
    assert "runs again the failed runs 2, 5 of" in new_page
    assert f'href="/jobs/{array_job.pk}/"' in new_page
    assert "2 runs: 0 completed, 0 failed, 0 running, 2 waiting" in new_page
    assert _rows(new_page) == [2, 5]
    old_page = user_client.get(f"/jobs/{array_job.pk}/").content.decode()
    assert "Runs 2, 5 of this sweep were run again as" in old_page
    assert f'href="/jobs/{again.pk}/"' in old_page


def test_the_failed_runs_of_a_grouped_sweep_run_again_alone(user_client, grouped_job):
    from jobs.compose import sending

    user_client.post(f"/jobs/{grouped_job.pk}/rerun-failed/", {"submission_key": sending.new_key()})
    again = Job.objects.get(rerun_of=grouped_job)
    assert 'SWEEP_RUNS="4 6"\n' in again.script
    assert "#SBATCH --array" not in again.script
    assert _rows(user_client.get(f"/jobs/{again.pk}/").content.decode()) == [4, 6]


def test_the_runs_run_again_end_on_the_sweeps_page_as_their_second_try(
    user_client, grouped_job, user, account
):
    again = _job(
        user,
        account,
        grouped_job.script.replace('SWEEP_RUNS="1 2 3 4 5 6"', 'SWEEP_RUNS="4 6"'),
        slurm_id="701",
        state=JobState.RUNNING,
        rerun_of=grouped_job,
        started=timezone.now() - timedelta(minutes=2),
    )
    # While they run again, the sweep's failed runs are not offered a second time.
    page = user_client.get(f"/jobs/{grouped_job.pk}/").content.decode()
    assert "Re-run failed runs" not in page
    response = user_client.post(f"/jobs/{grouped_job.pk}/rerun-failed/", follow=True)
    assert f"Its failed runs are running again as job {again}" in response.content.decode()
    # Each run's line in the folder is now its second try's, written over the first's.
    table = RunsTable.objects.get(job=grouped_job)
    table.text = table.text.replace(_line(4, "0.01", 1, 3, 20, "700"), "")
    table.text += _line(4, "0.01", 1, 0, 280, "701") + "\n" + _line(6, "0.01", 3, 0, 295, "701")
    table.save()
    again.state, again.nodes = JobState.COMPLETED, "ng201"
    again.save()
    page = user_client.get(f"/jobs/{grouped_job.pk}/").content.decode()
    assert "6 runs: 6 completed, 0 failed" in page
    fourth = _row(page, 4)
    assert f'Completed <span class="muted">(run again as <a href="/jobs/{again.pk}/">' in fourth
    assert ">0</td>" in fourth and "0:04:40" in fourth and "ng201" in fourth
    assert "Re-run failed runs" not in page


def test_a_sweep_with_no_failed_run_has_nothing_to_re_run(user_client, grouped_job):
    grouped_job.state = JobState.COMPLETED
    grouped_job.save()
    RunsTable.objects.filter(job=grouped_job).delete()
    lines = [_line(n, "0.1", n, 0, 300, "700") for n in range(1, 7)]
    _table(grouped_job, lines)
    page = user_client.get(f"/jobs/{grouped_job.pk}/").content.decode()
    assert "Re-run failed runs" not in page
    response = user_client.post(f"/jobs/{grouped_job.pk}/rerun-failed/", follow=True)
    assert "No run of this sweep failed" in response.content.decode()
    assert Job.objects.count() == 1


def test_only_the_owner_re_runs(grouped_job, django_user_model, seeded):
    # A portal user who shares the login sees the sweep, and may not act on it.
    other = django_user_model.objects.create_user("bob", password="x")
    shared = _account(other, grouped_job.account.cluster)
    shared.username = grouped_job.account.username
    shared.save()
    client = Client()
    client.force_login(other)
    page = client.get(f"/jobs/{grouped_job.pk}/").content.decode()
    assert "<h2>Runs</h2>" in page and "Re-run failed runs" not in page
    assert client.post(f"/jobs/{grouped_job.pk}/rerun-failed/").status_code == 403
    assert Job.objects.count() == 1


# --- What the script and runs.tsv say --------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "parts"),
    [
        ('RESULTS_DEST="$HOME"/results', [("var", "HOME"), ("text", "/results")]),
        (
            'RESULTS_DEST="$PROJECT"\'/my data/\'"${USER}"',
            [("var", "PROJECT"), ("text", "/my data/"), ("var", "USER")],
        ),
        ("RESULTS_DEST=/scratch/x", [("text", "/scratch/x")]),
        ("RESULTS_DEST=$(rm -rf ~)", None),
    ],
)
def test_the_results_folder_is_read_from_the_script(line, parts):
    assert results_folder(f"#!/bin/bash\n{line}\n    RESULTS_DEST=inner\n") == parts


def test_only_the_jobs_own_lines_are_its_runs():
    text = "\n".join(
        [
            HEADER,
            _line(1, "0.1", 1, 0, 300, "900_1", "ng1"),
            _line(2, "0.1", 2, 137, 30, "9001_2"),  # another job whose id starts the same
            _line(3, "0.1", 3, 0, 30, "899"),
            "4\trun-004_lr-0.01",  # cut short by the read's limit
        ]
    )
    found = lines_of(text, "900")
    assert list(found) == [1]
    assert (found[1].exit_code, found[1].elapsed_seconds, found[1].node) == (0, 300, "ng1")


@pytest.mark.parametrize(
    ("line", "numbers"),
    [
        ("1-6", [1, 2, 3, 4, 5, 6]),
        ("1-6%2", [1, 2, 3, 4, 5, 6]),
        ("3,5", [3, 5]),
        ("1-9:4", [1, 5, 9]),
    ],
)
def test_the_array_line_gives_the_runs(line, numbers):
    assert array_numbers(f"#SBATCH --array={line}\n") == numbers


def test_a_hand_edited_runs_line_is_read_as_bash_reads_it():
    edited = (
        "        1) RUN_NAME=run-001 lr=\"0.1 x\"  tag=a\\ b JOB_COMMAND='train ' ;;  \n"
        "        2) RUN_NAME=run-002 lr=2 tag='it'\"'\"'s' JOB_COMMAND='cd /x\ntrain' ;;\n"
    )
    assert [(run.number, run.folder, run.values) for run in runs_in(edited)] == [
        (1, "run-001", (("lr", "0.1 x"), ("tag", "a b"))),
        (2, "run-002", (("lr", "2"), ("tag", "it's"))),
    ]


# An edited script's array line, in forms sbatch reads as the portal's own (the dev cluster's
# sbatch made three tasks of each): re-run failed runs still runs only the failed ones.
@pytest.mark.parametrize(
    ("edited", "cap"),
    [
        ("#SBATCH --array=1-6 ", ""),
        ("#SBATCH --array 1-6", ""),
        ("#SBATCH -a 1-6", ""),
        ("#SBATCH --array=1-6%2\t", "%2"),
        ("#SBATCH --array=1-6 # six runs", ""),
    ],
)
def test_an_edited_array_line_still_re_runs_only_the_failed_runs(scripts, edited, cap):
    script = scripts["array"].replace("#SBATCH --array=1-6\n", f"{edited}\n")
    assert array_numbers(script) == [1, 2, 3, 4, 5, 6]
    again = with_only(script, [2, 5])
    arrays = [
        line for line in again.splitlines() if line.startswith(("#SBATCH --array", "#SBATCH -a"))
    ]
    assert arrays == [f"#SBATCH --array=2,5{cap}"]
    assert array_numbers(again) == [2, 5]


# --- The API ---------------------------------------------------------------------------------


def test_a_sweeps_runs_are_in_the_job(client, secret, grouped_job):
    body = client.get(f"/api/v1/jobs/{grouped_job.pk}", headers=_auth(secret)).json()
    runs = {run["number"]: run for run in body["runs"]}
    assert list(runs) == [1, 2, 3, 4, 5, 6]
    assert runs[4] == {
        "number": 4,
        "folder": "run-004_lr-0.01_seed-1",
        "values": {"lr": "0.01", "seed": "1"},
        "state": "FAILED",
        "state_label": "Failed",
        "outcome": "failed",
        "exit_code": 3,
        "elapsed_seconds": 20,
        "node": "ng101",
        "gpu_utilization": None,
        "outlier": "fast",
        "output_path": "portal-jobs/sweep1/slurm-700.out",
        "output_task": "",
    }
    assert runs[3]["outlier"] == "slow" and runs[6]["state"] == "TIMEOUT"
    summary = body["runs_summary"]
    assert (summary["runs"], summary["completed"], summary["failed"]) == (6, 4, 2)
    assert round(summary["gpu_hours"], 3) == round(1820 / 3600, 3)
    assert summary["median_seconds"] == 300
    assert body["rerun_of"] is None and body["reruns"] == []


def test_an_arrays_runs_name_their_tasks_output(client, secret, array_job):
    body = client.get(f"/api/v1/jobs/{array_job.pk}", headers=_auth(secret)).json()
    second = body["runs"][1]
    assert (second["state"], second["exit_code"], second["node"]) == ("FAILED", 1, "ng102")
    assert second["output_task"] == "2"
    assert body["runs"][5]["outcome"] == "waiting"
    refused = client.get(
        f"/api/v1/jobs/{array_job.pk}/output", {"task": "6"}, headers=_auth(secret)
    )
    assert "no array task 6" in _errors(refused)["task"][1]


def test_the_api_gives_no_runs_for_a_job_that_is_not_a_sweep(client, secret, user, account):
    job = _job(user, account, "#!/bin/bash\necho hi\n", state=JobState.FAILED)
    body = client.get(f"/api/v1/jobs/{job.pk}", headers=_auth(secret)).json()
    assert body["runs"] is None and body["runs_summary"] is None
    response = client.post(f"/api/v1/jobs/{job.pk}/rerun-failed", headers=_auth(secret))
    assert _errors(response)[None][0] == "not_a_sweep"


def test_the_failed_runs_run_again_once_per_key(client, secret, grouped_job):
    headers = _auth(secret) | {"Idempotency-Key": "again-1"}
    url = f"/api/v1/jobs/{grouped_job.pk}/rerun-failed"
    made = client.post(url, headers=headers)
    assert made.status_code == 201
    again = Job.objects.get(pk=made.json()["id"])
    assert again.rerun_of == grouped_job and 'SWEEP_RUNS="4 6"' in again.script
    retried = client.post(url, headers=headers)
    assert retried.status_code == 200 and retried.json()["id"] == again.pk
    assert Job.objects.count() == 2
    body = client.get(f"/api/v1/jobs/{again.pk}", headers=_auth(secret)).json()
    assert body["rerun_of"] == grouped_job.pk
    assert [run["number"] for run in body["runs"]] == [4, 6]
    old = client.get(f"/api/v1/jobs/{grouped_job.pk}", headers=_auth(secret)).json()
    assert old["reruns"] == [again.pk]


def test_a_running_sweep_is_not_re_run(client, secret, array_job):
    response = client.post(f"/api/v1/jobs/{array_job.pk}/rerun-failed", headers=_auth(secret))
    assert response.status_code == 409
    assert "has not finished" in response.json()["detail"]


def test_a_sweep_with_no_failed_run_is_not_re_run(client, secret, user, account, scripts):
    ended = timezone.now() - timedelta(hours=1)
    job = _job(user, account, scripts["array"], state=JobState.COMPLETED, ended=ended)
    for number in range(1, 7):
        _task(job, number, JobState.COMPLETED, 0, seconds=600)
    _table(job, [_line(1, "0.1", 1, 0, 600, "500_1")])
    response = client.post(f"/api/v1/jobs/{job.pk}/rerun-failed", headers=_auth(secret))
    assert response.status_code == 409
    assert "No run of this sweep failed" in response.json()["detail"]


def test_another_users_token_cannot_re_run(client, stranger, grouped_job):  # noqa: F811
    response = client.post(f"/api/v1/jobs/{grouped_job.pk}/rerun-failed", headers=_auth(stranger))
    assert response.status_code == 404
    assert client.get(f"/api/v1/jobs/{grouped_job.pk}", headers=_auth(stranger)).status_code == 404
    assert Job.objects.count() == 1


def test_the_schema_documents_the_runs(client, db):
    schema = client.get("/api/v1/openapi.json").json()
    assert "post" in schema["paths"]["/api/v1/jobs/{job_id}/rerun-failed"]
    responses = schema["paths"]["/api/v1/jobs/{job_id}/rerun-failed"]["post"]["responses"]
    assert {"200", "201", "404", "409", "422"} <= set(responses)
    run = schema["components"]["schemas"]["RunOut"]["properties"]
    for name in ("number", "values", "state", "exit_code", "elapsed_seconds", "node", "outlier"):
        assert run[name].get("description"), name
    assert "runs" in schema["components"]["schemas"]["JobDetailOut"]["properties"]


def test_the_cluster_is_asked_now_and_then_and_once_after_the_end(user, account, scripts):
    now = timezone.now()
    job = _job(user, account, scripts["grouped"], started=now - timedelta(hours=1))
    assert reading.due(job, None)  # never read
    table = RunsTable(job=job, read_at=now - timedelta(seconds=10))
    assert not reading.due(job, table)  # a page that refreshes every few seconds waits
    table.read_at = now - timedelta(seconds=reading.RUNS_READ_SECONDS + 1)
    assert reading.due(job, table)  # running: read again
    job.state, job.ended = JobState.COMPLETED, now - timedelta(minutes=5)
    table.read_at = now - timedelta(minutes=6)
    assert reading.due(job, table)  # read before it ended: once more
    table.read_at = now - timedelta(minutes=2)
    assert not reading.due(job, table)  # read after it ended: the lines are all there
    table.error = "The cluster did not answer."
    assert reading.due(job, table)  # unless that read failed
    table.error = ""
    again = _job(user, account, scripts["grouped"], slurm_id="501", rerun_of=job, started=now)
    assert reading.due(job, table)  # its failed runs run again, writing their lines anew
    again.state, again.ended = JobState.COMPLETED, now - timedelta(minutes=2)
    again.save()
    assert reading.due(job, table)  # they ended after the last read: once more
    table.read_at = now - timedelta(seconds=reading.RUNS_READ_SECONDS + 1)
    assert not reading.due(job, table)  # read after they ended
    other = _job(user, account, "#!/bin/bash\necho hi\n", slurm_id="9", started=now)
    assert not reading.due(other, None)  # not a sweep: nothing to read


# --- The read on the cluster: the shell it runs, run here ------------------------------------


def _probe(home, *parts: str, fallbacks: tuple[str, ...] = ()) -> tuple[str, str, str]:
    argv = ["bash", "-c", RUNS_PROBE, "portal-runs", str(RUNS_CAP), str(len(parts)), *parts]
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([*argv, *fallbacks], env=env, capture_output=True, text=True, check=True)
    path, what, text = [*out.stdout.split("\n", 2), "", ""][:3]
    return path, what, text


def test_the_read_takes_each_runs_own_line_else_the_table(tmp_path):
    results = tmp_path / "my results"
    (results / ".runs").mkdir(parents=True)
    assert _probe(tmp_path, "var:HOME", "text:/my results")[1] == "missing"
    (results / "runs.tsv").write_text(HEADER + "\n" + _line(1, "0.1", 1, 0, 5, "9") + "\n")
    path, what, text = _probe(tmp_path, "var:HOME", "text:/my results")
    assert (path, what) == (str(results), "table") and lines_of(text, "9")[1].elapsed_seconds == 5
    # A run's own line is there even when the table was not made again (no lock, say).
    (results / ".runs" / "run-002_lr-0.1_seed-2.tsv").write_text(_line(2, "0.1", 2, 1, 6, "9"))
    (results / ".runs" / "table.123").write_text("half a table")
    what, text = _probe(tmp_path, "var:HOME", "text:/my results")[1:]
    assert what == "lines" and list(lines_of(text, "9")) == [2]


def test_the_read_expands_variables_and_evaluates_nothing(tmp_path):
    folder = tmp_path / "$(touch pwned)"
    folder.mkdir()
    (folder / "runs.tsv").write_text(HEADER + "\n")
    assert _probe(tmp_path, "var:PROJECT", "text:/$(touch pwned)")[1] == "unset PROJECT"
    found = _probe(
        tmp_path, "var:PROJECT", "text:/$(touch pwned)", fallbacks=(f"PROJECT={tmp_path}",)
    )
    assert found[1] == "table" and not (tmp_path / "pwned").exists()
