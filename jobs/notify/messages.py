"""A notification in words: what happened, and what the owner can do about it. Made when it is
shown or sent, from the job as it stands (the reason line of a script that stopped itself is read
just after its end)."""

from dataclasses import dataclass

from guidance.engine.efficiency import JobFacts, resource_suggestions
from jobs.models import Job, JobState, Notification, NotifyEvent


@dataclass(frozen=True)
class Message:
    title: str  # one line: the e-mail's subject, the browser notification's title
    what: str  # what happened
    todo: str  # what to do about it; may be empty

    @property
    def body(self) -> str:
        return f"{self.what} {self.todo}".strip()


def describe(notification: Notification) -> Message:
    job = notification.job
    event = NotifyEvent(notification.event)
    state = JobState(notification.state)
    slurm = f"Slurm job {job.slurm_id}" if job.slurm_id else "The job"
    if event == NotifyEvent.STARTED:
        on = f" on {job.nodes}" if job.nodes else ""
        return Message(
            f"{job.name} started",
            f"{slurm} started{on}.",
            "Its page shows its output and, for a GPU job, how busy its GPUs are.",
        )
    if event == NotifyEvent.GPUS_IDLE:
        return Message(
            f"{job.name} is not using its GPUs",
            job.gpu_warning or f"{slurm} keeps GPUs that sit idle.",
            "If it cannot use them, cancel it and run it again with fewer GPUs (or none); its "
            "page shows each GPU's use.",
        )
    if event == NotifyEvent.NOT_SUBMITTED:
        return Message(
            f"{job.name} was not submitted",
            job.message or state.explanation,
            'Nothing ran. Change what the message names, then use "Submit again" on its page.',
        )
    if event == NotifyEvent.ENDED:
        return _ended(job, state, slurm)
    return _failed(job, state, slurm)


def _ended(job: Job, state: JobState, slurm: str) -> Message:
    if state == JobState.COMPLETED:
        took = f" in {job.elapsed}" if job.elapsed else ""
        return Message(
            f"{job.name} completed",
            f"{slurm} ran to the end{took} (exit code 0).",
            "Its page has its output and its efficiency report, with what to ask for next time.",
        )
    return Message(f"{job.name}: {state.label.lower()}", f"{slurm}: {state.explanation}", "")


def _failed(job: Job, state: JobState, slurm: str) -> Message:
    what = f"{slurm} ended {state.name}"  # Slurm's own word, as sacct and squeue print it
    if state == JobState.FAILED and job.exit_code is not None:
        what += f" with exit code {job.exit_code}"
    what += "."
    if job.message:
        what += f" {job.message}"  # the portal's reason line: the script said why it stopped
    elapsed, limit = job.one_task  # an array's tasks each ran out of their own time
    facts = JobFacts(
        elapsed_seconds=elapsed,
        time_limit_seconds=limit,
        max_rss_mb=job.max_rss_mb,
        requested_memory_mb=job.requested_memory_mb,
        timed_out=state == JobState.TIMEOUT,
        out_of_memory=state == JobState.OUT_OF_MEMORY,
    )
    # Only what the failure calls for: more time after a timeout, more memory after OOM.
    wanted = {JobState.TIMEOUT: "hours", JobState.OUT_OF_MEMORY: "memory"}.get(state)
    figures = [s for s in resource_suggestions(facts) if s.field == wanted]
    if figures:
        todo = " ".join(f"{s.reason} Next run: {s.change}." for s in figures)
    else:
        todo = state.explanation
        if state == JobState.FAILED:
            todo = "The end of its stderr, on its page, usually says why."
    return Message(f"{job.name} failed: {state.name}", what, todo)
