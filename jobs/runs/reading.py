"""Reading a sweep's runs' lines from its results folder on the cluster, while its owner looks:
one command, at most every RUNS_READ_SECONDS while the job runs, and once more after it ended;
kept in RunsTable, which the page and the API show from."""

import logging
from datetime import timedelta

from django.utils import timezone

from jobs.cluster import remote
from jobs.cluster.errors import ClusterError
from jobs.compose import path_check, sweep_script
from jobs.models import Job, RunsTable
from jobs.runs.listing import reruns_of
from jobs.runs.table import array_numbers, results_folder

logger = logging.getLogger(__name__)

# A page that refreshes every few seconds asks the cluster no more often than this.
RUNS_READ_SECONDS = 30
# Slurm's end time and the portal's clock may disagree: a read this soon after the end is not
# taken as the last.
CLOCK_MARGIN = timedelta(seconds=60)


def due(job: Job, table: RunsTable | None) -> bool:
    if not job.slurm_id or job.started is None or job.is_outside:
        return False  # no run has started: no line to read yet
    if not sweep_script.runs_in(job.script):
        return False  # not a sweep: no runs' lines anywhere
    if table is None:
        return True
    if timezone.now() - table.read_at < timedelta(seconds=RUNS_READ_SECONDS):
        return False
    # The jobs that run its failed runs again write those runs' lines anew, in the same folder:
    # read until the last of them has ended too.
    watched = [job, *(again for again in reruns_of(job) if again.slurm_id)]
    if not all(each.is_final for each in watched):
        return True
    # A job that ended with no end time (sacct did not say) counts from its start.
    end = max(each.ended or each.started or job.started for each in watched)
    return bool(table.error) or table.read_at <= end + CLOCK_MARGIN


def refresh(job: Job) -> None:
    """Reads the runs' lines of the owner's sweep when due, and keeps them (or why not)."""
    table = RunsTable.objects.filter(job=job).first()
    if not due(job, table):
        return
    results = results_folder(job.script)
    text, error = "", ""
    if results is None:
        error = "The script names no results folder the portal can read (RESULTS_DEST=)."
    else:
        try:
            text = remote.sweep_runs(job.account, results, _fallbacks(job))
        except ClusterError as failure:
            logger.info("Runs of job %s not read: %s", job.pk, failure.message)
            error = failure.message
    if error and table is not None and table.text:
        text = table.text  # what was read before stays on the page, with why it is not newer
    RunsTable.objects.update_or_create(
        job=job, defaults={"text": text, "error": error, "read_at": timezone.now()}
    )


def _fallbacks(job: Job) -> dict[str, str]:
    """What the job's own variables were, for a results folder that names them."""
    values = path_check.fallbacks(job.account.cluster, job.account.username)
    values |= {"SLURM_JOB_NAME": job.name, "SLURM_ARRAY_JOB_ID": job.slurm_id}
    if array_numbers(job.script) is None:
        values["SLURM_JOB_ID"] = job.slurm_id
    return values
