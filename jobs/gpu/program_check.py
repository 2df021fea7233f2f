""" "Check the program" on a job's page: the Python program the job runs, named from its script
(guidance.engine.code_check.entry), read from the cluster with the project's modules it imports
(jobs.cluster.remote.read_program: read only, never run), checked by the training-code checker
with the GPU use the portal measured, and kept as a ProgramCheck for the page to show."""

import dataclasses
from dataclasses import dataclass
from functools import cached_property

from django.conf import settings

from guidance.engine.code_check import CodeCheck, CodeFinding, Impact, Kind, Measured, check_code
from guidance.engine.code_check.entry import Entry, program_entry
from guidance.engine.code_check.findings import Unreadable
from guidance.engine.gpu_use import card_memory_gb, mean_of, peak_memory_gb
from guidance.engine.sources import Source
from guidance.facts import cluster_facts
from guidance.models import Cluster
from jobs.cluster import keys, remote
from jobs.cluster.errors import ClusterError
from jobs.gpu.efficiency import gpu_uses, ran_seconds, warmup_ends
from jobs.models import Job, ProgramCheck

LINKED_PLACES = 3  # the places of change the low-utilization warning names, most impact first
SNIPPET_CHARS = 40

OUTSIDE = (
    "This job was submitted outside the portal: Slurm's accounting keeps no script of it, so "
    "the portal cannot tell which program it runs. Paste the program on the Check page instead."
)
NOT_NAMED = (
    "The job's command names no Python program the portal can read (such as python train.py, "
    "torchrun … train.py or srun python -m pkg.train, with a path that no unset variable "
    "hides), so there is no program to check from here: paste it on the Check page instead."
)


def offered(job: Job) -> tuple[Entry | None, str]:
    """The program the job runs, and why the page offers no "Check the program" ("" when it
    does). Its script is read once a request: a long one takes a while."""
    if job.is_outside or not job.script:
        return None, OUTSIDE
    entry = program_entry(job.script)
    return entry, "" if entry else NOT_NAMED


def check_program(job: Job, entry: Entry) -> ProgramCheck:
    """Reads the program `entry` names (offered(job)) from the cluster and checks it; a
    cluster's refusal or a missing file is kept as the check's error, in the words the user is
    to read."""
    workdir = job.work_dir if job.is_outside else ""  # the portal submits from the home folder
    try:
        program = remote.read_program(job.account, workdir, entry)
    except ClusterError as failure:
        return ProgramCheck.objects.create(job=job, entry=entry.path, error=failure.message)
    except keys.DecryptionError:
        return ProgramCheck.objects.create(job=job, entry=entry.path, error=key_lost(job))
    cluster = cluster_facts(Cluster.objects.with_facts().get(pk=job.account.cluster_id))
    measured = measured_use(job, cluster.policy.utilization_target_percent)
    result = check_code(
        program.files,
        cluster,
        entry=entry.name,
        measured=measured,
        cpus_per_gpu=cpus_per_gpu(job),
    )
    return ProgramCheck.objects.create(
        job=job,
        entry=entry.path,
        files=list(result.files or program.files),
        findings=[_stored(f) for f in result.findings],
        unreadable=[dataclasses.asdict(u) for u in result.unreadable],
        not_read=list(program.not_read),
        measured=str(measured) if measured else "",
        trains_or_evaluates=result.trains_or_evaluates,
    )


def key_lost(job: Job) -> str:
    cluster = job.account.cluster.name
    return (
        f"The portal could not unlock the key it keeps for your login on {cluster}, so it could "
        "not read the program: make a new key on the Cluster logins page, add it to the "
        "cluster, and check again (an administrator can also restore the portal's key)."
    )


def measured_use(job: Job, target: float) -> Measured | None:
    """The job's GPU use as its GPU panel measures it: after the warm-up once the job is past
    it, else all of it; None before any GPU's use is known."""
    since = warmup_ends(job)
    past_warmup = since and ran_seconds(job) >= settings.GPU_WARMUP_SECONDS
    uses = (gpu_uses(job, target, since) if past_warmup else []) or gpu_uses(job, target)
    known = [u for u in uses if u.known]
    mean = mean_of(known)
    if mean is None:
        return None
    return Measured(
        mean_utilization=mean,
        minutes=max(u.seconds for u in known) / 60,
        gpus=len(known),
        peak_memory_gb=peak_memory_gb(known),
        memory_total_gb=card_memory_gb(known),
    )


def cpus_per_gpu(job: Job) -> int | None:
    """The CPUs each of the job's GPUs has, from what Slurm allocated; None before it says."""
    if job.cpus and job.gpus:
        return max(1, job.cpus // job.gpus)
    return None


def latest(job: Job) -> ProgramCheck | None:
    return job.program_checks.first()


def _stored(finding: CodeFinding) -> dict:
    return dataclasses.asdict(finding)


FINDING_FIELDS = frozenset(f.name for f in dataclasses.fields(CodeFinding))
UNREADABLE_FIELDS = frozenset(f.name for f in dataclasses.fields(Unreadable))


def shown(check: ProgramCheck) -> CodeCheck | None:
    """The stored check as the checker gave it, for the page; None when it was kept in a shape
    this version no longer reads (a field it lacks, a kind or impact since renamed): the page
    then asks for the check again rather than fail on every view."""
    try:
        findings = tuple(_finding(f) for f in check.findings)
        unreadable = tuple(
            Unreadable(**{k: v for k, v in u.items() if k in UNREADABLE_FIELDS})
            for u in check.unreadable
        )
    except (TypeError, ValueError, KeyError, AttributeError):
        return None
    return CodeCheck(findings, unreadable, tuple(check.files), check.trains_or_evaluates)


def _finding(stored: dict) -> CodeFinding:
    known = {k: v for k, v in stored.items() if k in FINDING_FIELDS}
    source = known.get("source")
    return CodeFinding(
        **{
            **known,
            "kind": Kind(known["kind"]),
            "impact": Impact(known["impact"]),
            "source": Source(**source) if source else None,
        }
    )


@dataclass(frozen=True)
class Numbered:
    """A finding with its place on the page (#program-finding-<number>) and its first line of
    code, short, for the GPU warning to name it."""

    number: int
    finding: CodeFinding

    @property
    def anchor(self) -> str:
        return f"program-finding-{self.number}"

    @property
    def snippet(self) -> str:
        lines = self.finding.before.strip().splitlines()
        first = lines[0].strip() if lines else ""
        if len(first) > SNIPPET_CHARS:
            return first[:SNIPPET_CHARS].rsplit(" ", 1)[0] + " …"  # at a word's end
        return first + (" …" if len(lines) > 1 else "")


@dataclass
class ProgramPanel:
    """What the job page shows about its program: whether it can be checked (and why not), and
    the last check. The program is named from the script only when the page asks (the GPU
    fragment htmx refreshes does not), and then once."""

    job: Job
    check: ProgramCheck | None
    findings: tuple[Numbered, ...] = ()
    unreadable: tuple[Unreadable, ...] = ()
    outdated: bool = False  # the kept check is in a shape this version cannot show

    @cached_property
    def _offered(self) -> tuple[Entry | None, str]:
        return offered(self.job)

    @property
    def entry(self) -> Entry | None:
        return self._offered[0]

    @property
    def why_not(self) -> str:
        return self._offered[1]

    @property
    def top_changes(self) -> tuple["Place", ...]:
        """The first places to change, by the impact of their first change: several rules about
        one line (a DataLoader without workers, pinned memory or a larger batch) are one place."""
        places: dict[tuple[str, int], list[Numbered]] = {}
        for numbered in self.findings:
            f = numbered.finding
            if f.kind is Kind.CHANGE:
                at = (f.file, f.line)
                if at in places or len(places) < LINKED_PLACES:
                    places.setdefault(at, []).append(numbered)
        return tuple(Place(tuple(changes)) for changes in places.values())


@dataclass(frozen=True)
class Place:
    """One line of the program with the changes found there, for the GPU warning to link."""

    changes: tuple[Numbered, ...]

    @property
    def first(self) -> Numbered:
        return self.changes[0]

    @property
    def titles(self) -> str:
        return "; ".join(n.finding.title for n in self.changes)


def panel(job: Job) -> ProgramPanel:
    check = latest(job)
    if check is None or check.error:
        return ProgramPanel(job, check)
    result = shown(check)
    if result is None:
        return ProgramPanel(job, check, outdated=True)
    numbered = tuple(Numbered(i, f) for i, f in enumerate(result.findings, 1))
    return ProgramPanel(job, check, numbered, result.unreadable)
