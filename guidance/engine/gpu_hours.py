"""The GPU-hours a composition asks Slurm for, before it is submitted: each job's GPUs times its
time limit, for every job the composition makes (a chain's parts, a sweep's jobs). Pure."""

from dataclasses import dataclass


def figure(value: float) -> str:
    """GPU-hours as people read them: '8', '2.5', '1,200', '0.25'."""
    return f"{value:,.2f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class GpuHours:
    gpus: int  # each job's, all its nodes
    hours: float  # each job's time limit
    parts: int = 1  # a chain's parts, each a job of `hours`
    jobs: int = 1  # a sweep's array tasks or grouped jobs (each a chain when `parts` > 1)
    runs: int = 1  # a sweep's runs

    @property
    def per_job(self) -> float:
        return self.gpus * self.hours

    @property
    def total(self) -> float:
        return self.per_job * self.parts * self.jobs

    @property
    def per_run(self) -> float:
        return self.total / self.runs

    @property
    def words(self) -> str:
        """'8 GPU-hours (2 GPUs x 4 h); a chain of 3 parts: 24 GPU-hours in all'."""
        # Here, not at the top: notes imports types, which imports this module.
        from guidance.engine.notes import describe_hours

        gpus = f"{self.gpus} GPU{'s' if self.gpus != 1 else ''}"
        each = f"{figure(self.per_job)} GPU-hours ({gpus} x {describe_hours(self.hours)})"
        if self.runs > 1:
            if self.jobs == self.runs:  # a job (or a chain) per run
                if self.parts > 1:
                    each += f"; each run a chain of {self.parts} parts"
                return (
                    f"{each}; {self.runs} runs: {figure(self.per_run)} GPU-hours a run, "
                    f"{figure(self.total)} GPU-hours in all"
                )
            jobs = "one job" if self.jobs == 1 else f"{self.jobs} jobs"
            return (
                f"{each} a job; {self.runs} runs in {jobs}: {figure(self.total)} GPU-hours in "
                f"all, {figure(self.per_run)} a run"
            )
        if self.parts > 1:
            return f"{each}; a chain of {self.parts} parts: {figure(self.total)} GPU-hours in all"
        return each
