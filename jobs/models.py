"""What the jobs app keeps: site templates and users' compositions, each user's login on each
cluster, jobs with their array tasks and events, and the GPU samples read from them. State lives
here with its transitions; nothing here talks to a cluster."""

import uuid
from datetime import timedelta

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models, transaction
from django.urls import reverse
from django.utils import timezone
from simple_history.models import HistoricalRecords

from guidance.engine.pending_reasons import PendingReason, explain_pending, in_about
from jobs.slurm.states import SlurmState


class SiteTemplate(models.Model):
    """A starting point admins publish, e.g. 'PyTorch training, one GPU'."""

    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    fields = models.JSONField(
        default=dict, help_text="The composer's field values, by field name (e.g. command)."
    )
    clusters = models.ManyToManyField(
        "guidance.Cluster",
        blank=True,
        related_name="site_templates",
        help_text="The clusters it is written for (their modules, paths); none: every cluster.",
    )
    published = models.BooleanField(default=True)
    order = models.PositiveSmallIntegerField(default=100)
    history = HistoricalRecords()

    class Meta:
        ordering = ["order", "name"]

    def __str__(self) -> str:
        return self.name

    def starting_values(self, cluster: str = "") -> dict:
        """Its fields, on `cluster` (a slug) when it is written for it, else on its first."""
        values = dict(self.fields)
        slugs = [c.slug for c in self.clusters.all()]
        if cluster in slugs:
            values["cluster"] = cluster
        elif slugs and values.get("cluster") not in slugs:
            values["cluster"] = slugs[0]
        return values


class Composition(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="compositions"
    )
    name = models.CharField(max_length=100)
    fields = models.JSONField(default=dict)
    script = models.TextField()
    # The user changed the script by hand: it no longer follows the form's values.
    edited = models.BooleanField(default=False)
    is_template = models.BooleanField(
        "use as my template", default=False, help_text="Offer it when starting a new job."
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("jobs:composition", args=[self.pk])


class ClusterAccountQuerySet(models.QuerySet):
    def login_of(self, user, cluster) -> "ClusterAccount | None":
        """The user's login on the cluster; None until they set one up (see no_login)."""
        return self.filter(owner=user, cluster=cluster).select_related("cluster").first()

    def sharing_with(self, accounts: models.QuerySet) -> "ClusterAccountQuerySet":
        """The logins of the same Unix user on the same cluster as any of `accounts`, them
        included: portal users who registered one shared login (a lab's account) share its
        reading (jobs.cluster.login_group)."""
        same = accounts.filter(
            cluster=models.OuterRef("cluster"), username=models.OuterRef("username")
        )
        return self.filter(models.Exists(same))


def no_login(cluster, to: str) -> str:
    """What a user with no login on `cluster` is told when they try `to` do something there
    ("to check paths there", "first; ...")."""
    return f"Set up your login on {cluster.name} {to}."


# A Unix user name on a cluster, as the portal accepts it for a login.
UNIX_NAME = RegexValidator(r"\A[a-z_][a-z0-9_.-]{0,31}\Z")


class ClusterAccount(models.Model):
    """A user's login on a cluster, with the key pair the portal made for it."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="cluster_accounts"
    )
    cluster = models.ForeignKey("guidance.Cluster", on_delete=models.CASCADE)
    username = models.CharField(max_length=32, validators=[UNIX_NAME])
    public_key = models.TextField()
    # The key is taken only on the cluster's automation node, as the portal's wrapper's forced
    # command: commands without a shell around them, and no SFTP (jobs.cluster.command_files).
    through_automation_node = models.BooleanField(
        default=False,
        help_text="This login goes through an automation node with the portal's wrapper "
        "(portal-remote) as the key's forced command.",
    )
    # Fernet-encrypted (jobs.cluster.keys): never shown, never logged.
    private_key_encrypted = models.TextField()
    tested_at = models.DateTimeField(null=True, blank=True)
    test_result = models.TextField(blank=True)
    # A worker polling this login holds it until then: a second worker (a poll that outlasted
    # beat's interval, or several workers) skips it rather than ask the cluster twice at once.
    polled_until = models.DateTimeField(null=True, blank=True)
    # The task that holds it: run again after the database went away mid-poll, it takes its own
    # hold back at once instead of waiting for it to expire.
    polled_by = models.CharField(max_length=64, blank=True, editable=False)
    # The end of the last read of the user's jobs from Slurm's accounting (jobs.cluster.history):
    # the next read asks only for what happened since, less a margin for clocks that disagree.
    history_read_until = models.DateTimeField(null=True, blank=True, editable=False)
    # Back-off (jobs.polling): a login whose jobs stayed as they were is polled less often, not
    # before poll_after; a submission or the owner opening a job page sets it back to now.
    poll_after = models.DateTimeField(null=True, blank=True, editable=False, db_index=True)
    quiet_polls = models.PositiveIntegerField(default=0, editable=False)

    objects = ClusterAccountQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["owner", "cluster"], name="one_account_per_cluster")
        ]

    def __str__(self) -> str:
        return f"{self.username}@{self.cluster.slug}"


class JobState(models.TextChoices):
    """The portal's two states before Slurm has the job, then Slurm's own
    (jobs.slurm.states.SlurmState), one for one under the same names, so that no state Slurm
    reports is shown as another."""

    SUBMITTING = "SUBMITTING", "Submitting"
    SUBMIT_FAILED = "SUBMIT_FAILED", "Not submitted"
    PENDING = "PENDING", "Pending"
    CONFIGURING = "CONFIGURING", "Starting"
    RUNNING = "RUNNING", "Running"
    SIGNALING = "SIGNALING", "Being signalled"
    RESIZING = "RESIZING", "Resizing"
    STOPPED = "STOPPED", "Stopped"
    SUSPENDED = "SUSPENDED", "Suspended"
    COMPLETING = "COMPLETING", "Completing"
    STAGE_OUT = "STAGE_OUT", "Copying files out"
    REQUEUED = "REQUEUED", "Requeued"
    REQUEUE_FED = "REQUEUE_FED", "Requeued by the federation"
    REQUEUE_HOLD = "REQUEUE_HOLD", "Requeued and held"
    SPECIAL_EXIT = "SPECIAL_EXIT", "Held after a special exit"
    RESV_DEL_HOLD = "RESV_DEL_HOLD", "Held: reservation deleted"
    COMPLETED = "COMPLETED", "Completed"
    FAILED = "FAILED", "Failed"
    TIMEOUT = "TIMEOUT", "Timed out"
    DEADLINE = "DEADLINE", "Deadline missed"
    CANCELLED = "CANCELLED", "Cancelled"
    OUT_OF_MEMORY = "OUT_OF_MEMORY", "Out of memory"
    NODE_FAIL = "NODE_FAIL", "Node failed"
    BOOT_FAIL = "BOOT_FAIL", "Node failed to boot"
    PREEMPTED = "PREEMPTED", "Preempted"
    REVOKED = "REVOKED", "Started on another cluster"
    UNKNOWN = "UNKNOWN", "Unknown state"

    @classmethod
    def final(cls) -> frozenset[str]:
        return _FINAL_STATES

    @classmethod
    def active(cls) -> frozenset[str]:
        """Slurm has the job and it may still run: the states the poller asks Slurm about."""
        return _ACTIVE_STATES

    @property
    def explanation(self) -> str:
        return STATE_EXPLANATIONS[self]


# Slurm decides which of its states are final (SlurmState.is_final); the portal adds its own.
_FINAL_STATES = frozenset(
    {JobState.SUBMIT_FAILED} | {JobState(state) for state in SlurmState if state.is_final}
)
_ACTIVE_STATES = frozenset(JobState) - _FINAL_STATES - {JobState.SUBMITTING}

# What each state means, in words for the job's owner; the job page shows it under the state.
STATE_EXPLANATIONS = {
    JobState.SUBMITTING: "The portal is handing the script to Slurm.",
    JobState.SUBMIT_FAILED: "The script was not submitted, so nothing ran: why is below.",
    JobState.PENDING: "Waiting in the queue for its turn or for free resources; why, and when "
    "Slurm expects to start it, show with it.",
    JobState.CONFIGURING: "Slurm has given the job its nodes and is getting them ready (some "
    "clusters start or boot nodes first); the script starts when they are.",
    JobState.RUNNING: "The script is running on its nodes.",
    JobState.SIGNALING: "Slurm is sending the job a signal: a warning before its time is up, or "
    "a cancel on its way. It is still running.",
    JobState.RESIZING: "The job's allocation is growing or shrinking, as the job asked; it goes on "
    "running.",
    JobState.STOPPED: "Paused: the job's processes were stopped (SIGSTOP) but it keeps its nodes. "
    "It carries on where it stopped when it is continued (SIGCONT), or ends when cancelled.",
    JobState.SUSPENDED: "Paused by an administrator or by the scheduler, to let another job use "
    "its CPUs. It carries on where it stopped when it is resumed.",
    JobState.COMPLETING: "The script has ended and Slurm is cleaning up on its nodes; how it ended "
    "shows in a moment.",
    JobState.STAGE_OUT: "The script has ended and Slurm is copying its files out of the burst "
    "buffer; how it ended shows when that is done.",
    JobState.REQUEUED: "Slurm put the job back in the queue (after a node failure, a preemption "
    "or a requeue request). It will start again from the beginning, so it resumes only from a "
    "checkpoint it wrote.",
    JobState.REQUEUE_FED: "The federation of clusters the job was sent to is putting it back in "
    "the queue. It will start again from the beginning.",
    JobState.REQUEUE_HOLD: "Slurm put the job back in the queue and holds it there: it will not "
    "start again until it is released (scontrol release) or you cancel it.",
    JobState.SPECIAL_EXIT: "The job ended with an exit code this cluster treats specially, so "
    "Slurm put it back in the queue on hold: it will not start again until it is released "
    "(scontrol release) or you cancel it.",
    JobState.RESV_DEL_HOLD: "The reservation the job was to run in was deleted, so Slurm holds the "
    "job in the queue: it will not start until it is released or you cancel it.",
    JobState.COMPLETED: "The script ran to the end and exited with code 0.",
    JobState.FAILED: "The script exited with an error (a non-zero exit code) or could not start; "
    "the end of stderr usually says why.",
    JobState.TIMEOUT: "Slurm stopped the job when it reached its time limit. Ask for more time, "
    "or save checkpoints and run it as a chain of shorter jobs.",
    JobState.DEADLINE: "Slurm ended the job because it could not finish before its deadline "
    "(--deadline).",
    JobState.CANCELLED: "The job was cancelled before it finished: by you, an administrator, or "
    "Slurm (for example when a job it depends on failed).",
    JobState.OUT_OF_MEMORY: "The job used more memory than it asked for and was killed. Ask for "
    "more memory (--mem), or make it use less.",
    JobState.NODE_FAIL: "A node the job ran on failed. This is not your program's fault: submit "
    "it again (it resumes from a checkpoint if it wrote one).",
    JobState.BOOT_FAIL: "The node Slurm chose for the job failed to boot, so the script never ran. "
    "This is not your program's fault: submit it again.",
    JobState.PREEMPTED: "Slurm stopped the job to make room for a job with a higher priority. "
    "Submit it again (it resumes from a checkpoint if it wrote one).",
    JobState.REVOKED: "The job was sent to several clusters of a federation and started on "
    "another one; the copy on this cluster was withdrawn. Its output is on that other cluster.",
    JobState.UNKNOWN: "Slurm reported a state this portal does not know. The portal keeps "
    "following the job; tell its administrators if this lasts.",
}


# Queued and not started: pending, or put back in the queue and held there.
WAITING_STATES = frozenset(
    {JobState.PENDING, JobState.REQUEUE_HOLD, JobState.SPECIAL_EXIT, JobState.RESV_DEL_HOLD}
)


# The folder of the home folder that holds each job's own (Job.job_dir), as the automation node's
# wrapper (docker/cluster-side/portal-remote) expects it.
JOBS_ROOT = "portal-jobs"


class JobOrigin(models.TextChoices):
    PORTAL = "portal", "Submitted here"
    OUTSIDE = "outside", "Submitted outside the portal"


class Via(models.TextChoices):
    """How something reached the portal: its pages, the JSON API, or an agent's MCP client."""

    PAGE = "page", "the portal's pages"
    API = "api", "the API"
    MCP = "mcp", "an MCP client"


class JobQuerySet(models.QuerySet):
    def visible_to(self, user) -> "JobQuerySet":
        """The user's own jobs and the other jobs of each login they share with other portal
        users (one Unix user on one cluster), which they could list with squeue anyway. Only a
        job's owner acts on it: the views check `owner` for that."""
        shared = ClusterAccount.objects.filter(
            owner=user,
            cluster=models.OuterRef("account__cluster"),
            username=models.OuterRef("account__username"),
        )
        return self.filter(models.Q(owner=user) | models.Exists(shared))


class Job(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="jobs"
    )
    account = models.ForeignKey(ClusterAccount, on_delete=models.PROTECT, related_name="jobs")
    composition = models.ForeignKey(
        Composition, null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs"
    )
    name = models.CharField(max_length=64)
    script = models.TextField()
    # Written into --comment, so that a retried submission finds the job it already made.
    tag = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    slurm_id = models.CharField(max_length=32, blank=True, db_index=True)
    state = models.CharField(max_length=20, choices=JobState, default=JobState.SUBMITTING)
    reason = models.CharField(max_length=200, blank=True)
    # While it waits: when the scheduler expects to start it (squeue's START_TIME) and how many
    # pending jobs of its partition come before it by priority (a number, no one's names).
    expected_start = models.DateTimeField(null=True, blank=True)
    ahead_in_queue = models.PositiveIntegerField(null=True, blank=True)
    # A waiting job this one was submitted to start sooner than: cancelled once Slurm accepts
    # this one (jobs.tasks.submit_job).
    replaces = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="replaced_by"
    )
    # The sweep whose failed runs this job runs again (its script runs only those: jobs.runs).
    rerun_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reruns"
    )
    # Submitted by the portal, or found in the user's accounting (sbatch in a terminal).
    origin = models.CharField(max_length=10, choices=JobOrigin, default=JobOrigin.PORTAL)
    # Who asked for it, for a job submitted here: through which door, with which API token, from
    # which client program (an MCP client's own name for itself).
    via = models.CharField(max_length=10, choices=Via, default=Via.PAGE)
    token = models.ForeignKey(
        "portal.ApiToken", null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs"
    )
    client = models.CharField(max_length=100, blank=True)
    # Where sbatch ran (sacct's WorkDir), for a job submitted outside the portal: its output is
    # there unless its script said otherwise.
    work_dir = models.CharField(max_length=300, blank=True)
    message = models.TextField(blank=True, help_text="What the cluster said, for the user.")
    exit_code = models.IntegerField(null=True, blank=True)
    signal = models.IntegerField(null=True, blank=True)
    nodes = models.CharField(max_length=200, blank=True)
    elapsed = models.CharField(max_length=32, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    submitted = models.DateTimeField(null=True, blank=True)
    # Set before each attempt: a later attempt must then look for the job before submitting. With
    # submit_task, the task that holds the submission until SUBMIT_LEASE_SECONDS after that.
    submit_started = models.DateTimeField(null=True, blank=True)
    submit_task = models.CharField(max_length=64, blank=True)
    started = models.DateTimeField(null=True, blank=True)
    ended = models.DateTimeField(null=True, blank=True)
    polled = models.DateTimeField(null=True, blank=True, help_text="Last good poll.")
    stale = models.BooleanField(default=False, help_text="The last poll could not reach it.")
    # What Slurm allocated and accounted (sacct), for the efficiency report and the admins' view.
    partition = models.CharField(max_length=64, blank=True)
    gpu_type = models.CharField(max_length=64, blank=True)
    gpus = models.PositiveIntegerField(
        null=True, blank=True, help_text="GPUs allocated, all nodes."
    )
    cpus = models.PositiveIntegerField(null=True, blank=True, help_text="CPUs allocated.")
    elapsed_seconds = models.PositiveIntegerField(null=True, blank=True)
    time_limit_seconds = models.PositiveIntegerField(
        null=True, blank=True, help_text="Of an array, the started tasks' limits added up."
    )
    # One allocation's figures: an array's tasks each run within their own limit, so the next
    # run's time is sized on its longest task, never on the tasks' sum.
    longest_task_seconds = models.PositiveIntegerField(
        null=True, blank=True, help_text="The longest task's elapsed time (the job's own, alone)."
    )
    task_time_limit_seconds = models.PositiveIntegerField(
        null=True, blank=True, help_text="Each task's time limit (the job's own, alone)."
    )
    cpu_seconds = models.FloatField(null=True, blank=True, help_text="TotalCPU: user + system.")
    max_rss_mb = models.FloatField(null=True, blank=True)
    requested_memory_mb = models.FloatField(null=True, blank=True)
    # GPU use so far, kept with the job so that lists and warnings need no sample query.
    gpu_utilization = models.FloatField(
        null=True, blank=True, help_text="Mean compute utilization of its GPUs (%)."
    )
    gpu_warning = models.TextField(blank=True, help_text="Why its GPUs look wasted, if they do.")
    gpu_energy_j = models.FloatField(
        null=True,
        blank=True,
        help_text="Joules its GPUs used, from NVML's energy counter; empty: unknown (a GPU "
        "without the counter, or no samples).",
    )
    # The page that asked for it shows a fresh key with each "Submit" button: a second click, or
    # the same form sent again, finds this job instead of making another (jobs.compose.sending).
    submission_key = models.CharField(max_length=32, blank=True, editable=False)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-created"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "submission_key"],
                condition=~models.Q(submission_key=""),
                name="one_job_per_submission_key",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.slurm_id or 'not submitted'})"

    def get_absolute_url(self) -> str:
        return reverse("jobs:job", args=[self.pk])

    @property
    def job_dir(self) -> str:
        return f"{JOBS_ROOT}/{self.name}"

    @property
    def one_task(self) -> tuple[int | None, int | None]:
        """Elapsed and time limit of one allocation: an array's longest task and each task's
        limit (its saved figures add the tasks up), else the job's own; rows saved before the
        task figures fall back to those."""
        longest = self.longest_task_seconds
        return (
            longest if longest is not None else self.elapsed_seconds,
            self.task_time_limit_seconds or self.time_limit_seconds,
        )

    @property
    def is_final(self) -> bool:
        return self.state in JobState.final()

    @property
    def not_yours(self) -> str:
        """Why a portal user who shares its login (Job.objects.visible_to) cannot act on it."""
        login = f"{self.account.username} on {self.account.cluster.name}"
        return (
            f"This job is on the login {login}, which you share with other portal users, but it "
            "is not yours in the portal: only the portal user it belongs to can act on it here."
        )

    @property
    def is_outside(self) -> bool:
        """Submitted with sbatch outside the portal: no script, no job folder, no composition."""
        return self.origin == JobOrigin.OUTSIDE

    @property
    def unchecked(self) -> bool:
        """Active, and no poll has read it when one was due: the next poll was due a period after
        the last good one (or when the login's back-off put it) and has not come for two periods
        more, whatever the reason (a worker lost mid-poll, workers stopped, a broker down)."""
        last = self.polled or self.submitted
        if self.is_final or not self.slurm_id or last is None:
            return False
        period = timedelta(seconds=settings.POLL_SECONDS)
        due = last + period
        if (backed_off := self.account.poll_after) and backed_off > due:
            due = backed_off
        return timezone.now() > due + 2 * period

    @property
    def looks_stale(self) -> bool:
        """What pages and the API call stale: the last poll failed, or none came in time."""
        return self.stale or self.unchecked

    @property
    def state_explanation(self) -> str:
        return JobState(self.state).explanation

    @property
    def waiting(self) -> bool:
        """In the queue, not started: what the page says about its reason and start applies."""
        return self.state in WAITING_STATES

    @property
    def pending_reason(self) -> PendingReason:
        """Why it waits, in words (Slurm's code kept beside them); none once it has started."""
        return explain_pending(self.reason if self.waiting else "")

    @property
    def starts_in(self) -> str:
        """The scheduler's expected start from now: 'in about 2 h 10 min'."""
        return in_about(self.expected_start - timezone.now()) if self.expected_start else ""

    @property
    def queue_place(self) -> str:
        """How many pending jobs of its partition come before it, as a sentence."""
        ahead, where = self.ahead_in_queue, self.partition or "its partition"
        if ahead is None:
            return ""
        if ahead == 0:
            return f"No pending job in {where} comes before it by priority."
        jobs = "pending job" if ahead == 1 else "pending jobs"
        verb = "comes" if ahead == 1 else "come"
        return f"{ahead} {jobs} in {where} {verb} before it by priority."

    def record(self, state: str, detail: str = "") -> None:
        """Moves to `state`, keeping an event when it changes; the caller saves."""
        if state != self.state or detail:
            self.events.create(state=state, detail=detail)
        self.state = state

    def submitted_as(self, slurm_id: str) -> None:
        self.slurm_id = slurm_id
        self.submitted = timezone.now()
        self.message = self.reason = ""
        with transaction.atomic():  # the event and the id together, in one commit
            self.record(JobState.PENDING, f"Submitted as Slurm job {slurm_id}.")
            self.save(update_fields=["slurm_id", "submitted", "message", "reason", "state"])

    def submission_failed(self, message: str) -> None:
        self.message = message
        self.reason = ""
        self.submit_task = ""  # held by nobody: "Submit again" queues a task that may take it
        self.record(JobState.SUBMIT_FAILED, message)
        self.save()

    def retry_submission(self) -> None:
        self.message = ""
        self.record(JobState.SUBMITTING, "Submitting again.")
        self.save()


class JobTask(models.Model):
    """One task of an array or chain, as Slurm reports it."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="tasks")
    task_id = models.CharField(max_length=32)
    slurm_id = models.CharField(max_length=32)
    state = models.CharField(max_length=20, choices=JobState)
    exit_code = models.IntegerField(null=True, blank=True)
    started = models.DateTimeField(null=True, blank=True)
    ended = models.DateTimeField(null=True, blank=True)
    nodes = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["job", "slurm_id"]
        constraints = [models.UniqueConstraint(fields=["job", "task_id"], name="one_row_per_task")]

    def __str__(self) -> str:
        return self.slurm_id

    @property
    def is_final(self) -> bool:
        return self.state in JobState.final()


class RunsTable(models.Model):
    """A sweep's runs.tsv as last read from its results folder on the cluster (each run's exit
    code, time and node, written by the script), kept so that the page asks the cluster at most
    once in a while, and never again once read after the job ended (jobs.runs.reading)."""

    job = models.OneToOneField(Job, on_delete=models.CASCADE, related_name="runs_table")
    text = models.TextField(blank=True, help_text="The file as read; empty when not there yet.")
    read_at = models.DateTimeField()
    error = models.TextField(blank=True, help_text="Why the last read failed, if it did.")

    def __str__(self) -> str:
        return f"Runs of {self.job}"


class JobEvent(models.Model):
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(auto_now_add=True)
    state = models.CharField(max_length=20, choices=JobState)
    detail = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "pk"]

    def __str__(self) -> str:
        return f"{self.job_id} {self.state}"


class SampleFile(models.Model):
    """One node's GPU sample file of a job (or of one part of a chain), and how far it is read."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="sample_files")
    task_id = models.CharField(max_length=32, blank=True, help_text="Array task; blank if none.")
    node = models.CharField(max_length=64)
    path = models.CharField(max_length=300, help_text="Relative to the login's home.")
    offset = models.BigIntegerField(default=0, help_text="Bytes read and stored so far.")
    # The sampler's own word when it could not sample (no NVML, no nvidia-smi), for the page.
    note = models.TextField(blank=True)
    finished = models.BooleanField(default=False, help_text="Its summary line was read.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "path"], name="one_row_per_file")]

    def __str__(self) -> str:
        return self.path


class GpuDevice(models.Model):
    """One GPU a job ran on, as its sampler's first lines described it."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="gpu_devices")
    task_id = models.CharField(max_length=32, blank=True)
    node = models.CharField(max_length=64)
    uuid = models.CharField(max_length=100)
    index = models.PositiveSmallIntegerField(null=True, blank=True)
    name = models.CharField(max_length=100, blank=True)
    pci_bus_id = models.CharField(max_length=32, blank=True)
    memory_total_mb = models.FloatField(null=True, blank=True)
    mig = models.BooleanField(default=False, help_text="A MIG slice: utilization is unknown.")
    # From the sampler's summary line, or kept up to date from the samples while it runs.
    mean_utilization = models.FloatField(null=True, blank=True)
    peak_memory_mb = models.FloatField(null=True, blank=True)
    # Its samples' energy added up; None while none has reported any (unknown, never 0).
    energy_j = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["job", "task_id", "node", "index"]
        constraints = [
            models.UniqueConstraint(
                fields=["job", "task_id", "node", "uuid"], name="one_row_per_gpu"
            )
        ]

    def __str__(self) -> str:
        return f"{self.node} {self.name or self.uuid}"


class GpuSample(models.Model):
    """A GPU's use over `seconds` up to `at`: one sampler line, or the mean of several."""

    device = models.ForeignKey(GpuDevice, on_delete=models.CASCADE, related_name="samples")
    at = models.DateTimeField()
    seconds = models.FloatField(help_text="The span this sample covers.")
    utilization = models.FloatField(null=True, blank=True, help_text="%; None: unknown (MIG).")
    memory_used_mb = models.FloatField(null=True, blank=True)
    power_w = models.FloatField(null=True, blank=True)
    temperature_c = models.FloatField(null=True, blank=True)
    energy_j = models.FloatField(
        null=True, blank=True, help_text="Joules used over `seconds`; None: unknown."
    )

    class Meta:
        ordering = ["device", "at"]
        indexes = [models.Index(fields=["device", "at"])]

    def __str__(self) -> str:
        return f"{self.device_id} {self.at:%H:%M:%S}"


class NotifyEvent(models.TextChoices):
    """What a user may be told about a job: each happens at most once to a job."""

    STARTED = "started", "Started"
    ENDED = "ended", "Ended"
    FAILED = "failed", "Failed"
    GPUS_IDLE = "gpus_idle", "GPUs idle"
    # Slurm refused it, or the cluster could not be reached: kept apart from FAILED so that a job
    # submitted again and failing then is still told.
    NOT_SUBMITTED = "not_submitted", "Not submitted"


class NotificationSwitches(models.Model):
    """Which events a user is told about, and how: their default, or one job's own choice."""

    on_start = models.BooleanField("when it starts", default=False)
    on_end = models.BooleanField("when it ends", default=True)
    on_failure = models.BooleanField("when it fails", default=True)
    on_idle_gpus = models.BooleanField("when its GPUs sit idle", default=True)
    by_email = models.BooleanField("by e-mail", default=True)
    in_browser = models.BooleanField("in the portal and this browser", default=True)

    EVENT_FIELDS = {
        NotifyEvent.STARTED: "on_start",
        NotifyEvent.ENDED: "on_end",
        NotifyEvent.FAILED: "on_failure",
        NotifyEvent.GPUS_IDLE: "on_idle_gpus",
        NotifyEvent.NOT_SUBMITTED: "on_failure",
    }
    FIELDS = [*EVENT_FIELDS.values(), "by_email", "in_browser"]

    class Meta:
        abstract = True

    def wants(self, event: str) -> bool:
        return getattr(self, self.EVENT_FIELDS[NotifyEvent(event)])

    def values(self) -> dict[str, bool]:
        return {name: getattr(self, name) for name in self.FIELDS}


class NotificationDefaults(NotificationSwitches):
    """A user's default, which each job follows until its page is given a choice of its own."""

    owner = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_defaults"
    )

    def __str__(self) -> str:
        return f"Notification defaults of {self.owner}"


class JobNotificationChoice(NotificationSwitches):
    job = models.OneToOneField(Job, on_delete=models.CASCADE, related_name="notification_choice")

    def __str__(self) -> str:
        return f"Notifications of {self.job}"


class EmailStatus(models.TextChoices):
    NONE = "", "Not e-mailed"
    DUE = "due", "To be sent"
    SENDING = "sending", "Taken by a worker"
    SENT = "sent", "Sent"
    FAILED = "failed", "Not sent"


class Notification(models.Model):
    """One event of one job, recorded once (the unique constraint) in the transaction that saw
    it; its e-mail goes out after that commits, to the worker that claims it."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications"
    )
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="notifications")
    event = models.CharField(max_length=20, choices=NotifyEvent)
    state = models.CharField(max_length=20, choices=JobState, help_text="The job's, then.")
    created = models.DateTimeField(auto_now_add=True)
    in_browser = models.BooleanField(default=True, help_text="Listed in the portal.")
    read = models.BooleanField(default=False)
    # Shown by the Web Notifications API in one of the owner's open pages (claimed by one).
    pushed = models.BooleanField(default=False)
    email_status = models.CharField(max_length=10, choices=EmailStatus, blank=True)
    email_attempts = models.PositiveSmallIntegerField(default=0)
    emailed = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["job", "event"], name="one_notification_per_event")
        ]
        indexes = [models.Index(fields=["owner", "read"]), models.Index(fields=["email_status"])]

    def __str__(self) -> str:
        return f"{self.job_id} {self.event}"


class ClusterLoad(models.Model):
    """A cluster's GPUs as its last read found them (one sinfo and one squeue per cluster per
    poll cycle, through any of its users' logins): shown to every user with its age."""

    cluster = models.OneToOneField(
        "guidance.Cluster", on_delete=models.CASCADE, related_name="load"
    )
    read_at = models.DateTimeField(null=True, blank=True, help_text="The last good read.")
    # One dict per partition and GPU type: total, allocated, unavailable, free, pending.
    gpus = models.JSONField(default=list)
    error = models.TextField(blank=True, help_text="Why the last read failed, if it did.")
    # The worker that reads it now, and until when: two workers never read one cluster at once.
    reading_until = models.DateTimeField(null=True, blank=True, editable=False)

    def __str__(self) -> str:
        return f"GPUs of {self.cluster}"


class ProgramCheck(models.Model):
    """One "Check the program" of a job: the files read from the cluster and what the training-
    code checker found in them, kept as the page shows them (jobs.gpu.program_check)."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="program_checks")
    checked_at = models.DateTimeField(default=timezone.now)
    # A TextField: the path comes from the job's script, which puts no bound on it.
    entry = models.TextField(help_text="The program, as the job's command names it.")
    files = models.JSONField(default=list, help_text="The files read, entry first.")
    findings = models.JSONField(default=list)
    unreadable = models.JSONField(default=list, help_text="Files the checker could not read.")
    not_read = models.JSONField(default=list, help_text="What was not read from the cluster, why.")
    measured = models.CharField(max_length=100, blank=True, help_text="The GPU use it was tied to.")
    error = models.TextField(blank=True, help_text="Why the program could not be read.")
    trains_or_evaluates = models.BooleanField(
        default=True,
        help_text="Whether the files read train or evaluate a model: without, every line was still "
        "checked, and only the program-wide advice waits for the loop.",
    )

    class Meta:
        ordering = ["-checked_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.entry} of {self.job}"


class ClusterReader(models.Model):
    """A cluster's read-only service login, which an admin sets up where the site gives the
    portal one: each poll cycle reads every portal user's jobs on the cluster through it, with
    the same few Slurm commands whatever the number of users (jobs.cluster.reader_poll). The
    portal makes its key pair, or an admin pastes the site's; the private half is kept as the
    users' are."""

    cluster = models.OneToOneField(
        "guidance.Cluster", on_delete=models.CASCADE, related_name="reader"
    )
    username = models.CharField(
        max_length=32, validators=[UNIX_NAME], help_text="The service login's Unix user name."
    )
    public_key = models.TextField(editable=False)
    # Fernet-encrypted (jobs.cluster.keys): never shown, never logged.
    private_key_encrypted = models.TextField(editable=False)
    enabled = models.BooleanField(
        default=True, help_text="Off: every login's jobs are read through that login, one by one."
    )
    # The worker that reads through it now, and until when: two workers never read one cluster
    # at once. The task that holds it may take it back at once (run again after a failure).
    reading_until = models.DateTimeField(null=True, blank=True, editable=False)
    read_by = models.CharField(max_length=64, blank=True, editable=False)

    def __str__(self) -> str:
        return f"{self.username}@{self.cluster.slug} (reader)"


class PlanState(models.TextChoices):
    CHECKED = "checked", "Checked"
    WAITING = "waiting", "Waiting for your word"
    SUBMITTED = "submitted", "Submitted"
    DECLINED = "declined", "Declined"


class Plan(models.Model):
    """A job a program (an agent, a script) composed or wrote, checked, costed and estimated, that
    reaches Slurm only once its owner says so: on the portal's page, or through the agent's
    client when it can ask the user (jobs.plans)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="plans"
    )
    account = models.ForeignKey(ClusterAccount, on_delete=models.CASCADE, related_name="plans")
    via = models.CharField(max_length=10, choices=Via, default=Via.API)
    token = models.ForeignKey(
        "portal.ApiToken", null=True, blank=True, on_delete=models.SET_NULL, related_name="plans"
    )
    client = models.CharField(max_length=100, blank=True)
    name = models.CharField(max_length=64)
    script = models.TextField()
    # The script checker's findings: [{code, severity, message, fix}].
    findings = models.JSONField(default=list)
    blocked = models.BooleanField(default=False, help_text="A finding says it would fail.")
    gpu_hours = models.FloatField(null=True, blank=True)
    gpu_hours_words = models.CharField(max_length=200, blank=True)
    start = models.DateTimeField(null=True, blank=True, help_text="Slurm's --test-only estimate.")
    start_note = models.CharField(max_length=300, blank=True)
    state = models.CharField(max_length=10, choices=PlanState, default=PlanState.CHECKED)
    created = models.DateTimeField(default=timezone.now)
    asked = models.DateTimeField(null=True, blank=True)
    decided = models.DateTimeField(null=True, blank=True)
    decided_via = models.CharField(max_length=10, choices=Via, blank=True)
    job = models.OneToOneField(
        Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="plan"
    )

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["owner", "state"])]

    def __str__(self) -> str:
        return f"{self.name} on {self.account.cluster.slug} ({self.state})"

    def get_absolute_url(self) -> str:
        return reverse("jobs:plan", args=[self.pk])

    @property
    def expires(self):
        return self.created + timedelta(minutes=settings.PLAN_MINUTES)

    @property
    def expired(self) -> bool:
        return timezone.now() >= self.expires

    @property
    def open(self) -> bool:
        """Still to be decided, and young enough to be."""
        return self.state in (PlanState.CHECKED, PlanState.WAITING) and not self.expired

    @classmethod
    def undecided(cls, owner) -> models.QuerySet:
        """The owner's open plans (`open`, in one query)."""
        young = timezone.now() - timedelta(minutes=settings.PLAN_MINUTES)
        undecided = [PlanState.CHECKED, PlanState.WAITING]
        return cls.objects.filter(owner=owner, state__in=undecided, created__gt=young)

    @classmethod
    def waiting_count(cls, owner) -> int:
        """How many of the owner's plans a program asked to submit and wait for their word."""
        return cls.undecided(owner).filter(state=PlanState.WAITING).count()


class TokenAction(models.Model):
    """What a program did with one of the user's API tokens that a user would want to know of:
    plans made, submissions asked, answered or confirmed, jobs cancelled."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="token_actions"
    )
    token = models.ForeignKey(
        "portal.ApiToken", null=True, on_delete=models.SET_NULL, related_name="actions"
    )
    via = models.CharField(max_length=10, choices=Via)
    client = models.CharField(max_length=100, blank=True)
    at = models.DateTimeField(default=timezone.now)
    what = models.CharField(max_length=300)
    job = models.ForeignKey(
        Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="token_actions"
    )
    plan = models.ForeignKey(
        Plan, null=True, blank=True, on_delete=models.SET_NULL, related_name="token_actions"
    )

    class Meta:
        ordering = ["-at", "-pk"]
        indexes = [models.Index(fields=["owner", "-at"])]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.what}"
