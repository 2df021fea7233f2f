"""The Slurm parsers, fed what a real Slurm 22.05 printed (tests/slurm_output/capture.py)."""

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from jobs.cluster.slurm import (
    NODES_ARGV,
    PARTITIONS_ARGV,
    SACCT_FIELDS,
    SQUEUE_FORMAT,
    ExitCode,
    GpuPartition,
    Gres,
    JobId,
    SlurmParseError,
    SlurmState,
    duration_hours,
    expand_hostlist,
    gpu_partitions,
    parse_duration,
    parse_gres,
    parse_memory_mb,
    parse_nodes,
    parse_partitions,
    parse_sacct,
    parse_sbatch,
    parse_squeue,
    parse_time,
    parse_tres,
    sacct_argv,
    squeue_argv,
)

OUTPUT = Path(__file__).parent / "slurm_output"
TAG = "8f0c1f7e-2b9d-4c7a-9a51-0d5e3b6c2f14"


def captured(name: str) -> str:
    return (OUTPUT / name).read_text()


def by_name(jobs):
    return {job.name: job for job in jobs if job.array_task_id is None}


def by_id(jobs):
    return {str(job.job_id): job for job in jobs}


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


@pytest.mark.parametrize(
    ("text", "job_id", "task", "pending"),
    [
        ("35", 35, None, ""),
        ("35_2", 35, 2, ""),
        ("35_[2-3%1]", 35, None, "2-3%1"),
    ],
)
def test_it_reads_job_ids(text, job_id, task, pending):
    parsed = JobId.parse(text)
    assert (parsed.job_id, parsed.array_task_id, parsed.pending_tasks) == (job_id, task, pending)
    assert str(parsed) == text


@pytest.mark.parametrize("text", ["", "35_", "35.batch", "abc", "35_x"])
def test_it_rejects_what_is_not_a_job_id(text):
    with pytest.raises(SlurmParseError):
        JobId.parse(text)


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


# Partitions and nodes


def test_it_reads_partitions():
    assert PARTITIONS_ARGV == ["scontrol", "--oneliner", "show", "partition"]
    a100, rtx = parse_partitions(captured("scontrol_partitions.txt"))
    assert (a100.name, a100.nodes, a100.max_hours, a100.is_default, a100.state) == (
        "gpu-a100",
        ["a100-1", "a100-2"],
        1.0,
        True,
        "UP",
    )
    assert a100.default_hours == pytest.approx(10 / 60)
    assert (a100.total_cpus, a100.total_nodes) == (8, 2)
    assert a100.tres["gres/gpu:a100"] == "4"
    assert a100.fields["DefMemPerNode"] == "UNLIMITED"
    assert (rtx.name, rtx.nodes, rtx.max_hours, rtx.is_default) == (
        "gpu-rtx",
        ["rtx-1"],
        0.5,
        False,
    )


def test_an_unlimited_partition_has_no_max_hours():
    [partition] = parse_partitions("PartitionName=long Nodes=n[01-02] MaxTime=UNLIMITED State=UP")
    assert (partition.max_hours, partition.default_hours) == (None, None)
    assert partition.nodes == ["n01", "n02"]


def test_it_reads_nodes():
    assert NODES_ARGV[-1] == "--format=%N|%P|%c|%m|%G"
    nodes = parse_nodes(captured("sinfo_nodes.txt"))
    assert [(node.name, node.partitions, node.cpus, node.memory_mb) for node in nodes] == [
        ("a100-1", ("gpu-a100",), 4, 8000),
        ("a100-2", ("gpu-a100",), 4, 8000),
        ("rtx-1", ("gpu-rtx",), 4, 8000),
    ]
    assert nodes[0].gpus == (Gres("gpu", "a100", 2),)


def test_a_node_in_two_partitions_is_one_node():
    nodes = parse_nodes("n1|gpu*|64|512000|gpu:h100:4(S:0-1)\nn1|long|64|512000|gpu:h100:4(S:0-1)")
    assert [(node.name, node.partitions) for node in nodes] == [("n1", ("gpu", "long"))]


def test_it_derives_gpu_partitions_for_the_portal():
    partitions = parse_partitions(captured("scontrol_partitions.txt"))
    nodes = parse_nodes(captured("sinfo_nodes.txt"))
    assert gpu_partitions(partitions, nodes) == [
        GpuPartition("gpu-a100", "a100", 2, 4, 8000, 2, 1.0, pytest.approx(1 / 6)),
        GpuPartition("gpu-rtx", "rtx", 2, 4, 8000, 1, 0.5, pytest.approx(1 / 6)),
    ]


def test_a_partition_without_gpus_is_left_out():
    partitions = parse_partitions("PartitionName=cpu Nodes=c1 MaxTime=1-00:00:00 State=UP")
    assert gpu_partitions(partitions, parse_nodes("c1|cpu|32|64000|(null)")) == []


# Values


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1-02:03:04", timedelta(days=1, hours=2, minutes=3, seconds=4)),
        ("02:03:04", timedelta(hours=2, minutes=3, seconds=4)),
        ("1:00:00", timedelta(hours=1)),
        ("03:04", timedelta(minutes=3, seconds=4)),
        ("0:00", timedelta(0)),
        ("00:00.275", timedelta(seconds=0.275)),
        ("UNLIMITED", None),
        ("Partition_Limit", None),
        ("INVALID", None),
        ("N/A", None),
        ("", None),
    ],
)
def test_it_reads_durations(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["1-02", "abc", "12", "1:2:3:4"])
def test_it_rejects_what_is_not_a_duration(text):
    with pytest.raises(SlurmParseError):
        parse_duration(text)


def test_it_gives_durations_in_hours():
    assert duration_hours("00:30:00") == 0.5
    assert duration_hours("2-00:00:00") == 48
    assert duration_hours("UNLIMITED") is None


@pytest.mark.parametrize("text", ["Unknown", "None", "N/A", ""])
def test_a_time_not_known_is_none(text):
    assert parse_time(text) is None


def test_it_rejects_what_is_not_a_time():
    with pytest.raises(SlurmParseError):
        parse_time("yesterday")


@pytest.mark.parametrize(
    ("text", "megabytes"),
    [("500M", 500), ("1G", 1024), ("1.50G", 1536), ("2048K", 2), ("8000", 8000), ("", None)],
)
def test_it_reads_memory_in_megabytes(text, megabytes):
    assert parse_memory_mb(text) == megabytes


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("a100-[1-2],rtx-1", ["a100-1", "a100-2", "rtx-1"]),
        ("n[01-03,07]", ["n01", "n02", "n03", "n07"]),
        ("gpu[9-10]-ib", ["gpu9-ib", "gpu10-ib"]),
        ("rtx-1", ["rtx-1"]),
        ("None assigned", []),
        ("", []),
    ],
)
def test_it_expands_host_lists(text, names):
    assert expand_hostlist(text) == names


@pytest.mark.parametrize(
    ("text", "gres"),
    [
        ("gpu:a100:2", (Gres("gpu", "a100", 2),)),
        ("gpu:2", (Gres("gpu", "", 2),)),
        ("gpu:h100:4(S:0-1),shard:h100:8", (Gres("gpu", "h100", 4), Gres("shard", "h100", 8))),
        ("(null)", ()),
    ],
)
def test_it_reads_gres(text, gres):
    assert parse_gres(text) == gres


def test_it_reads_tres():
    assert parse_tres("billing=1,cpu=1,gres/gpu:rtx=2,gres/gpu=2,mem=500M,node=1") == {
        "billing": "1",
        "cpu": "1",
        "gres/gpu:rtx": "2",
        "gres/gpu": "2",
        "mem": "500M",
        "node": "1",
    }
    assert parse_tres("") == {}


def test_it_reads_exit_codes():
    assert ExitCode.parse("0:15") == ExitCode(0, 15)
    assert ExitCode.parse("") is None
    with pytest.raises(SlurmParseError):
        ExitCode.parse("3")


# Job states. Every state Slurm 22.05 documents (squeue(1), sacct(1)), and whether the job has
# ended: the one place that decides it for the portal.
STATES = [
    ("BOOT_FAIL", True),
    ("CANCELLED", True),
    ("COMPLETED", True),
    ("COMPLETING", False),
    ("CONFIGURING", False),
    ("DEADLINE", True),
    ("FAILED", True),
    ("NODE_FAIL", True),
    ("OUT_OF_MEMORY", True),
    ("PENDING", False),
    ("PREEMPTED", True),
    ("REQUEUED", False),
    ("REQUEUE_FED", False),
    ("REQUEUE_HOLD", False),
    ("RESIZING", False),
    ("RESV_DEL_HOLD", False),
    ("REVOKED", True),
    ("RUNNING", False),
    ("SIGNALING", False),
    ("SPECIAL_EXIT", False),
    ("STAGE_OUT", False),
    ("STOPPED", False),
    ("SUSPENDED", False),
    ("TIMEOUT", True),
]


@pytest.mark.parametrize(("text", "final"), [*STATES, ("CANCELLED by 0", True)])
def test_it_reads_every_state_and_whether_it_is_final(text, final):
    state = SlurmState.parse(text)
    assert state == text.split()[0] and state is not SlurmState.UNKNOWN
    assert state.is_final is final


def test_a_state_a_later_slurm_may_add_reads_as_unknown_and_not_final():
    assert SlurmState.parse("EXPLODED") is SlurmState.UNKNOWN
    assert not SlurmState.UNKNOWN.is_final


@pytest.mark.parametrize("text", ["", "0:0", "a100-1", "running"])
def test_it_rejects_what_is_not_a_state(text):
    with pytest.raises(SlurmParseError):
        SlurmState.parse(text)


def test_squeue_shows_suspended_stopped_and_held_jobs():
    """Captured on the dev cluster: `scontrol suspend`, `scancel --signal=STOP`,
    `scontrol requeuehold State=SpecialExit`, `scontrol requeuehold` and `scontrol requeue`."""
    named = by_name(parse_squeue(captured("squeue_paused_and_held.txt")))
    assert {name: (job.state, job.reason) for name, job in named.items()} == {
        "suspend": (SlurmState.SUSPENDED, ""),
        "stop": (SlurmState.STOPPED, ""),
        "specialexit": (SlurmState.SPECIAL_EXIT, "job requeued in held state"),
        "requeuehold": (SlurmState.PENDING, "job requeued in held state"),
        "requeue": (SlurmState.PENDING, "BeginTime"),
    }
    assert not any(job.state.is_final for job in named.values())


def test_sacct_knows_less_than_squeue_about_paused_and_held_jobs():
    """The same jobs, captured: sacct reads a stopped job as RUNNING and one held after a special
    exit as PENDING, which is why tracking believes squeue about a job that has not ended."""
    jobs = by_id(parse_sacct(captured("sacct_paused_and_held.txt")))
    assert {job_id: job.state for job_id, job in jobs.items()} == {
        "2": SlurmState.SUSPENDED,
        "3": SlurmState.RUNNING,  # stopped
        "4": SlurmState.PENDING,  # requeued and held
        "5": SlurmState.PENDING,  # special exit
        "6": SlurmState.PENDING,  # requeued
    }


def test_sacct_reads_the_run_before_a_requeue():
    """Captured with --duplicates, which shows the runs before a requeue: REQUEUED, not final."""
    jobs = by_id(parse_sacct(captured("sacct_requeued.txt")))
    assert [job.state for job in jobs.values()] == [SlurmState.REQUEUED] * 3
    assert not jobs["4"].state.is_final
    assert jobs["4"].end == datetime(2026, 11, 23, 7, 3, 32)


def test_sacct_reads_final_states_the_dev_cluster_cannot_produce():
    """Hand-written (sacct_final_states_handwritten.txt) in the columns the portal asks for,
    modelled on the captured lines: a node that failed to boot or failed while the job ran, a
    missed deadline, memory exceeded, a preemption, a federation sibling revoked."""
    jobs = by_id(parse_sacct(captured("sacct_final_states_handwritten.txt")))
    assert {job_id: job.state for job_id, job in jobs.items()} == {
        "101": SlurmState.BOOT_FAIL,
        "102": SlurmState.DEADLINE,
        "103": SlurmState.NODE_FAIL,
        "104": SlurmState.OUT_OF_MEMORY,
        "105": SlurmState.PREEMPTED,
        "106": SlurmState.REVOKED,
    }
    assert all(job.state.is_final for job in jobs.values())
    assert (jobs["102"].start, jobs["102"].reason) == (None, "DeadLine")
    assert (jobs["104"].exit_code, jobs["104"].max_rss_mb) == (ExitCode(0, 125), 500)


def test_squeue_reads_states_the_dev_cluster_cannot_produce():
    """Hand-written (squeue_states_handwritten.txt), modelled on the captured lines."""
    jobs = by_name(parse_squeue(captured("squeue_states_handwritten.txt")))
    assert [job.state for job in jobs.values()] == [
        SlurmState.CONFIGURING,
        SlurmState.SIGNALING,
        SlurmState.RESIZING,
        SlurmState.STAGE_OUT,
        SlurmState.COMPLETING,
        SlurmState.REQUEUED,
        SlurmState.REQUEUE_FED,
        SlurmState.REQUEUE_HOLD,
        SlurmState.RESV_DEL_HOLD,
    ]
    assert not any(job.state.is_final for job in jobs.values())
    assert jobs["resv-deleted"].reason == "ReservationDeleted"


def test_a_state_word_slurm_may_add_later_keeps_the_others_readable():
    text = captured("sacct.txt").replace("32|32|FAILED|", "32|32|EXPLODED|")
    jobs = by_id(parse_sacct(text))
    assert (jobs["32"].state, jobs["32"].state_text) == (SlurmState.UNKNOWN, "EXPLODED")
    assert jobs["33"].state is SlurmState.TIMEOUT
    text = captured("squeue_active.txt").replace("|RUNNING|None|", "|EXPLODED|None|", 1)
    exploded = [job for job in parse_squeue(text) if job.state is SlurmState.UNKNOWN]
    assert [job.state_text for job in exploded] == ["EXPLODED"]


def test_sacct_keeps_the_state_as_printed():
    jobs = by_id(parse_sacct(captured("sacct.txt")))
    assert (jobs["34"].state, jobs["34"].state_text) == (SlurmState.CANCELLED, "CANCELLED by 1001")
