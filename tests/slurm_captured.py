"""Slurm output captured from a real cluster (tests/slurm_output/), as the parser tests read it."""

from pathlib import Path

OUTPUT = Path(__file__).parent / "slurm_output"


def captured(name: str) -> str:
    return (OUTPUT / name).read_text()


def by_name(jobs):
    return {job.name: job for job in jobs if job.array_task_id is None}


def by_id(jobs):
    return {str(job.job_id): job for job in jobs}
