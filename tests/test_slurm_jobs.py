"""sbatch, squeue and sacct: their argv and parsers, fed what a real Slurm 22.05 printed
(tests/slurm_output/capture.py)."""

from datetime import datetime, timedelta

import pytest

from jobs.slurm.sacct import SACCT_FIELDS, parse_sacct, sacct_argv
from jobs.slurm.sbatch import parse_sbatch
from jobs.slurm.squeue import SQUEUE_FORMAT, parse_squeue, squeue_argv
from jobs.slurm.states import SlurmState
from jobs.slurm.values import ExitCode, SlurmParseError
from tests.slurm_captured import by_id, by_name, captured

TAG = "8f0c1f7e-2b9d-4c7a-9a51-0d5e3b6c2f14"


# sbatch


def test_it_reads_the_job_id():
    assert parse_sbatch(captured("sbatch_parsable.txt")).job_id == 29


def test_it_reads_the_cluster_after_the_job_id():
    submitted = parse_sbatch(captured("sbatch_parsable_cluster.txt"))
    assert (submitted.job_id, submitted.cluster) == (30, "portallab")


@pytest.mark.parametrize("stdout", ["", "\n", "sbatch: error: invalid partition specified", "x;y"])
def test_it_rejects_output_without_a_job_id(stdout):
    with pytest.raises(SlurmParseError):
        parse_sbatch(stdout)


# squeue


def test_squeue_asks_for_the_columns_the_parser_reads():
    argv = squeue_argv("portaltest")
    assert argv[:3] == ["env", "TZ=UTC", "squeue"]
    assert "--user=portaltest" in argv
    assert f"--format={SQUEUE_FORMAT}" in argv
    assert {"--noheader", "--all", "--array", "--states=all"} <= set(argv)


def test_squeue_shows_running_and_waiting_jobs():
    jobs = parse_squeue(captured("squeue_active.txt"))
    named = by_name(jobs)
    assert len(jobs) == 14

    timeout = named["timeout"]
    assert timeout.state is SlurmState.RUNNING
    assert timeout.reason == ""
    assert timeout.nodes == ["a100-2"]
    assert timeout.start == datetime(2026, 11, 22, 4, 8, 2)
    assert timeout.time_used == timedelta(seconds=8)
    assert timeout.time_limit == timedelta(minutes=1)
    assert timeout.user == "portaltest"
    assert timeout.comment == ""

    assert named["ok"].comment == TAG
    assert named["rtx wait"].name == "rtx wait"


def test_squeue_says_why_jobs_wait():
    named = by_name(parse_squeue(captured("squeue_active.txt")))
    reasons = {
        name: (job.state, job.reason, job.start, job.nodes)
        for name, job in named.items()
        if job.state is SlurmState.PENDING
    }
    assert reasons == {
        "rtx wait": (SlurmState.PENDING, "Resources", None, []),
        "held": (SlurmState.PENDING, "JobHeldUser", None, []),
        "after-timeout": (SlurmState.PENDING, "Dependency", None, []),
    }
    later = by_name(parse_squeue(captured("squeue_dependency_never.txt")))
    assert later["after-timeout"].reason == "DependencyNeverSatisfied"


def test_squeue_lists_array_tasks_with_their_array_job():
    tasks = [job for job in parse_squeue(captured("squeue_active.txt")) if job.name == "chain"]
    assert [(job.slurm_id, job.array_job_id, job.array_task_id) for job in tasks] == [
        ("35_1", 35, 1),
        ("35_2", 35, 2),
        ("35_3", 35, 3),
    ]
    assert [(job.state, job.reason) for job in tasks] == [
        (SlurmState.COMPLETED, ""),
        (SlurmState.PENDING, "JobArrayTaskLimit"),
        (SlurmState.PENDING, "JobArrayTaskLimit"),
    ]
    assert all(job.job_id.job_id == 35 for job in tasks)


def test_squeue_keeps_finished_jobs_with_their_ending():
    named = by_name(parse_squeue(captured("squeue_finished.txt")))
    assert (named["timeout"].state, named["timeout"].reason) == (SlurmState.TIMEOUT, "TimeLimit")
    assert named["timeout"].time_used == timedelta(minutes=1, seconds=27)
    assert (named["exit3"].state, named["exit3"].reason) == (SlurmState.FAILED, "NonZeroExitCode")
    assert named["cancel"].state is SlurmState.CANCELLED
    assert named["held"].state is SlurmState.CANCELLED
    assert all(job.state.is_final for job in named.values())


def test_squeue_keeps_pipes_in_the_comment():
    held = by_name(parse_squeue(captured("squeue_active.txt")))["held"]
    assert held.comment == "tag|with|pipes"


def test_squeue_reads_quotes_as_text():
    line = '41|41|N/A|PENDING|Priority|N/A|0:00|UNLIMITED||portaltest|say "hi"|"quoted'
    [job] = parse_squeue(line)
    assert (job.name, job.comment, job.time_limit) == ('say "hi"', '"quoted', None)


def test_squeue_rejects_lines_with_missing_columns():
    with pytest.raises(SlurmParseError):
        parse_squeue("41|41|N/A|PENDING")


def test_a_poll_reads_only_the_rows_of_its_own_jobs_array_tasks_included():
    # A login's queue lists every job of its Unix user: the portal's few, and whatever else
    # the user (or another portal user on the same Unix user) has queued.
    rows = parse_squeue(captured("squeue_active.txt"), of_jobs=["35", "39"])
    assert sorted(row.slurm_id for row in rows) == ["35_1", "35_2", "35_3", "39"]
    assert by_name(rows)["held"].comment == "tag|with|pipes"
    assert parse_squeue(captured("squeue_active.txt"), of_jobs=[]) == []


def test_a_poll_still_rejects_a_broken_line_among_other_jobs():
    with pytest.raises(SlurmParseError):
        parse_squeue("41|41|N/A|PENDING|Priority|N/A|0:00|UNLIMITED||u|n|c\n41", of_jobs=["7"])


# sacct


def test_sacct_asks_for_the_columns_the_parser_reads():
    argv = sacct_argv("portaltest", datetime(2026, 11, 22, 4, 8, 0))
    assert argv[:3] == ["env", "TZ=UTC", "sacct"]
    assert {"--parsable2", "--noheader", "--user=portaltest", "--endtime=now"} <= set(argv)
    assert "--starttime=2026-11-22T04:08:00" in argv
    assert f"--format={','.join(SACCT_FIELDS)}" in argv
    assert not any(arg.startswith("--jobs") for arg in argv)
    assert "--jobs=39,40" in sacct_argv("portaltest", datetime(2026, 1, 1), jobs=[39, "40"])


def test_sacct_gives_one_record_per_job_with_its_steps_folded_in():
    jobs = parse_sacct(captured("sacct.txt"))
    assert [job.slurm_id for job in jobs] == [
        "29", "30", "31", "32", "33", "34", "35_1", "35_2", "35_3", "36", "37", "38",
    ]  # fmt: skip
    memory = by_id(jobs)["36"]
    assert memory.max_rss_mb == pytest.approx(316688 / 1024)
    assert memory.total_cpu == timedelta(seconds=0.275)
    assert memory.requested_memory_mb == 1024
    assert memory.time_limit == timedelta(minutes=2)
    assert memory.elapsed == timedelta(seconds=41)


def test_sacct_names_each_job_and_where_it_ran_from_not_its_steps():
    jobs = by_id(parse_sacct(captured("sacct.txt")))
    assert (jobs["38"].name, jobs["38"].work_dir) == ("rtx wait", "/home/portaltest")
    assert {jobs[f"35_{task}"].name for task in (1, 2, 3)} == {"chain"}


def test_sacct_without_job_ids_asks_for_every_job_of_the_user_in_the_window():
    # The history read: whatever was submitted, by the portal or in a terminal.
    argv = sacct_argv("portaltest", datetime(2026, 11, 22, 4, 8, 0))
    assert "--user=portaltest" in argv and "--endtime=now" in argv
    assert "--starttime=2026-11-22T04:08:00" in argv
    assert "--allocations" not in argv  # the steps carry MaxRSS
    assert not any(arg.startswith(("--jobs", "--state")) for arg in argv)


def test_a_pipe_in_a_job_name_shifts_only_the_free_text_columns():
    text = captured("sacct.txt").replace("|rtx wait|", "|rtx|wait|")
    jobs = by_id(parse_sacct(text))
    assert (jobs["38"].name, jobs["38"].elapsed, jobs["38"].partition) == (
        "rtx",
        timedelta(seconds=2),
        "gpu-rtx",
    )
    assert not jobs["38"].comment.startswith("portal:")


def test_sacct_reads_the_exit_code():
    failed = by_id(parse_sacct(captured("sacct.txt")))["32"]
    assert failed.state is SlurmState.FAILED
    assert failed.exit_code == ExitCode(3, 0)
    assert failed.exit_code.code == 3


def test_sacct_reads_a_timeout():
    timeout = by_id(parse_sacct(captured("sacct.txt")))["33"]
    assert timeout.state is SlurmState.TIMEOUT
    assert timeout.state.is_final
    assert timeout.exit_code == ExitCode(0, 0)
    assert timeout.time_limit == timedelta(minutes=1)
    assert timeout.elapsed == timedelta(minutes=1, seconds=27)
    assert timeout.end == datetime(2026, 11, 22, 4, 9, 29)
    assert timeout.max_rss_mb == pytest.approx(3024 / 1024)  # from its batch step


def test_sacct_reads_who_cancelled():
    cancelled = by_id(parse_sacct(captured("sacct.txt")))["34"]
    assert cancelled.state is SlurmState.CANCELLED
    assert cancelled.cancelled_by == 1001
    assert cancelled.exit_code == ExitCode(0, 0)


def test_sacct_reads_array_tasks_with_their_own_ids():
    tasks = [job for job in parse_sacct(captured("sacct.txt")) if job.job_id.job_id == 35]
    assert [(job.job_id.array_task_id, job.job_id_raw) for job in tasks] == [
        (1, 41),
        (2, 42),
        (3, 35),
    ]
    assert [job.start for job in tasks] == [
        datetime(2026, 11, 22, 4, 8, 5),
        datetime(2026, 11, 22, 4, 8, 11),
        datetime(2026, 11, 22, 4, 8, 16),
    ]
    assert tasks[1].reason == "JobArrayTaskLimit"  # why it waited


def test_sacct_reads_the_allocation():
    jobs = by_id(parse_sacct(captured("sacct.txt")))
    ok = jobs["31"]
    assert ok.tres["gres/gpu:a100"] == "1"
    assert ok.gpus == 1
    assert ok.nodes == ["a100-1"]
    assert ok.comment == TAG
    assert jobs["37"].gpus == 2
    assert jobs["29"].gpus == 0
    assert jobs["29"].comment == ""


def test_sacct_reads_the_partition_gpu_type_and_cpus():
    jobs = by_id(parse_sacct(captured("sacct.txt")))
    assert (jobs["31"].partition, jobs["31"].gpu_type, jobs["31"].cpus) == ("gpu-a100", "a100", 1)
    assert (jobs["37"].partition, jobs["37"].gpu_type) == ("gpu-rtx", "rtx")
    assert (jobs["29"].partition, jobs["29"].gpu_type) == ("gpu-a100", "")  # no GPU asked
    pending = by_id(parse_sacct(captured("sacct_active.txt")))["38"]
    assert (pending.partition, pending.cpus, pending.gpu_type) == ("gpu-rtx", None, "")


def test_sacct_reads_running_and_pending_jobs():
    jobs = by_id(parse_sacct(captured("sacct_active.txt")))
    running = jobs["33"]
    assert (running.state, running.end, running.exit_code) == (
        SlurmState.RUNNING,
        None,
        ExitCode(0, 0),
    )
    assert not running.state.is_final
    pending = jobs["38"]
    assert (pending.state, pending.start, pending.nodes, pending.tres) == (
        SlurmState.PENDING,
        None,
        [],
        {},
    )


def test_sacct_reads_jobs_cancelled_before_they_could_start():
    held, after = parse_sacct(captured("sacct_never_eligible.txt"))
    assert (held.state, held.start, held.reason, held.comment) == (
        SlurmState.CANCELLED,
        None,
        "JobHeldUser",
        "tag|with|pipes",
    )
    assert (after.reason, after.nodes, after.end) == (
        "Dependency",
        [],
        datetime(2026, 11, 22, 4, 9, 30),
    )
