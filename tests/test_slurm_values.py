"""The parsers of values several Slurm commands print: job ids, durations, times, sizes, host
lists, GRES, TRES, exit codes."""

from datetime import timedelta

import pytest

from jobs.slurm.values import (
    ExitCode,
    Gres,
    JobId,
    SlurmParseError,
    duration_hours,
    expand_hostlist,
    parse_duration,
    parse_gres,
    parse_memory_mb,
    parse_timestamp,
    parse_tres,
)


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
    assert parse_timestamp(text) is None


def test_it_rejects_what_is_not_a_time():
    with pytest.raises(SlurmParseError):
        parse_timestamp("yesterday")


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
