"""Every job state Slurm 22.05 prints, whether it is final, and how squeue and sacct print them
(tests/slurm_output/, captured where the dev cluster can produce a state)."""

from datetime import datetime

import pytest

from jobs.slurm.sacct import parse_sacct
from jobs.slurm.squeue import parse_squeue
from jobs.slurm.states import SlurmState
from jobs.slurm.values import ExitCode, SlurmParseError
from tests.slurm_captured import by_id, by_name, captured

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
