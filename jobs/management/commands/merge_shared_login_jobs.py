"""Removes the copies of Slurm jobs that portals before login groups (jobs.cluster.login_group)
made: each portal user who registered a shared Unix user imported that login's history as their
own, so one job submitted outside the portal had a row per user, and, where accounting keeps no
comments, another user's portal job had an "outside" twin.

A copy is an outside job of the same login group, Slurm id and name as a job kept: the portal's
own job of that id if there is one, else the oldest outside row. A Slurm id used again after a
controller lost its state is told apart by the submission day. Without --delete it only counts.
"""

from collections import defaultdict

from django.core.management.base import BaseCommand
from django.db import transaction

from jobs.models import Job, JobOrigin


class Command(BaseCommand):
    help = "Deletes the rows shared logins made of one Slurm job twice (a dry run by default)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--delete", action="store_true", help="Delete them (else count).")

    def handle(self, *args, delete: bool, **options) -> None:
        same: dict[tuple, list[Job]] = defaultdict(list)
        rows = Job.objects.exclude(slurm_id="").select_related("account").order_by("pk")
        for job in rows.only("pk", "slurm_id", "name", "origin", "submitted", "account"):
            day = job.submitted.date() if job.submitted else None
            login = (job.account.cluster_id, job.account.username)
            same[(login, job.slurm_id, job.name, day)].append(job)
        copies = []
        for jobs in same.values():
            portal = [job for job in jobs if job.origin == JobOrigin.PORTAL]
            kept = portal[0] if portal else jobs[0]
            outside = [job for job in jobs if job.origin == JobOrigin.OUTSIDE]
            copies += [job.pk for job in outside if job is not kept]
        if delete:
            with transaction.atomic():
                Job.objects.filter(pk__in=copies).delete()
        verb = "Deleted" if delete else "Would delete (run with --delete)"
        self.stdout.write(f"{verb} {len(copies)} copies of jobs of shared logins.")
