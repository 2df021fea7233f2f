"""'Re-run failed runs': a new job of the sweep's script that runs only the runs that failed,
submitted the composer's way (jobs.compose.sending: one job per key, queued on commit)."""

from jobs.compose import sending, sweep_script
from jobs.models import Job
from jobs.runs.listing import Runs, reruns_of
from jobs.runs.table import array_numbers, grouped_runs


class NotRerun(Exception):
    """Why the sweep's failed runs cannot be run again; `conflict`: not now (409), else never
    with this job (422)."""

    def __init__(self, message: str, *, conflict: bool) -> None:
        super().__init__(message)
        self.message, self.conflict = message, conflict


def refusal(job: Job, runs: Runs | None) -> NotRerun | None:
    """Why there is nothing to re-run, or None when there is."""
    if runs is None:
        return NotRerun("This job is not a sweep written by the portal.", conflict=False)
    if not job.slurm_id or not job.is_final:
        return NotRerun(
            "The sweep has not finished: its failed runs can be run again once it has.",
            conflict=True,
        )
    if running := [again for again in reruns_of(job) if not again.is_final]:
        return NotRerun(
            f"Its failed runs are running again as job {running[0]}: "
            "those still failing can be run again once it has ended.",
            conflict=True,
        )
    if not runs.failed:
        return NotRerun(
            "No run of this sweep failed: there is nothing to run again.", conflict=True
        )
    return None


def rerun(job: Job, runs: Runs, key: str) -> tuple[Job, bool]:
    """The job the key made already (and False), or a new one that runs only the failed runs,
    queued for submission (and True). Check `refusal` first."""
    numbers = [run.number for run in runs.failed]
    script = sweep_script.with_only(job.script, numbers)
    return sending.submit(
        job.owner, job.account, job.name, script, key, job.composition, rerun_of=job
    )


def numbers_run(job: Job) -> list[int]:
    """The runs the job's script runs (a re-run's: the failed runs it was made for)."""
    grouped = grouped_runs(job.script)
    return grouped[0] if grouped else array_numbers(job.script) or []
