"""The states of a Slurm job, and which of them are final."""

import re
from enum import StrEnum

from jobs.slurm.values import SlurmParseError


class SlurmState(StrEnum):
    """A job's state as squeue's %T and sacct's State print it (Slurm 22.05)."""

    BOOT_FAIL = "BOOT_FAIL"
    CANCELLED = "CANCELLED"
    COMPLETED = "COMPLETED"
    COMPLETING = "COMPLETING"
    CONFIGURING = "CONFIGURING"
    DEADLINE = "DEADLINE"
    FAILED = "FAILED"
    NODE_FAIL = "NODE_FAIL"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    PENDING = "PENDING"
    PREEMPTED = "PREEMPTED"
    REQUEUED = "REQUEUED"
    REQUEUE_FED = "REQUEUE_FED"
    REQUEUE_HOLD = "REQUEUE_HOLD"
    RESIZING = "RESIZING"
    RESV_DEL_HOLD = "RESV_DEL_HOLD"
    REVOKED = "REVOKED"
    RUNNING = "RUNNING"
    SIGNALING = "SIGNALING"
    SPECIAL_EXIT = "SPECIAL_EXIT"
    STAGE_OUT = "STAGE_OUT"
    STOPPED = "STOPPED"
    SUSPENDED = "SUSPENDED"
    TIMEOUT = "TIMEOUT"
    # Not printed by Slurm 22.05: a later Slurm's new state word reads as this, not as an error,
    # so that one job stops neither the poll nor the parse of the other jobs. Not final.
    UNKNOWN = "UNKNOWN"

    @classmethod
    def parse(cls, text: str) -> "SlurmState":
        # sacct says who cancelled: "CANCELLED by 1001".
        word = text.strip().split(" ", 1)[0]
        # Anything but a state word (a column out of place) is an error, not a new state.
        if not re.fullmatch(r"[A-Z][A-Z_]*", word):
            raise SlurmParseError(f"not a job state: {text!r}")
        try:
            return cls(word)
        except ValueError:
            return cls.UNKNOWN

    @property
    def is_final(self) -> bool:
        """The job has ended and will not run again unless someone resubmits or requeues it.

        The one place that decides it: the portal's JobState.final() asks here.
        """
        return self in _FINAL


_FINAL = frozenset(
    {
        SlurmState.BOOT_FAIL,
        SlurmState.CANCELLED,
        SlurmState.COMPLETED,
        SlurmState.DEADLINE,
        SlurmState.FAILED,
        SlurmState.NODE_FAIL,
        SlurmState.OUT_OF_MEMORY,
        SlurmState.PREEMPTED,
        SlurmState.REVOKED,
        SlurmState.TIMEOUT,
    }
)
