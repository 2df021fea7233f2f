"""The engine's vocabulary: a cluster's published facts and a job description in, advice out.

Plain frozen dataclasses with no Django in sight; `guidance.facts` builds them from the database.
"""

from dataclasses import dataclass, field
from enum import StrEnum

from guidance.engine.archives import suffixes_in_words
from guidance.engine.gpu_hours import GpuHours
from guidance.engine.slurm_time import format_time
from guidance.engine.sources import Source
from guidance.engine.sweep import Plan as SweepPlan
from guidance.engine.sweep import Sweep


class Workload(StrEnum):
    TRAINING = "training"
    INFERENCE = "inference"
    DEBUGGING = "debugging"
    INTERACTIVE = "interactive"


class TierKind(StrEnum):
    """Kinds of storage a cluster publishes."""

    MEMORY = "memory"
    NODE_LOCAL = "node_local"
    HOME = "home"
    SCRATCH = "scratch"
    PROJECT = "project"
    NEARLINE = "nearline"

    @property
    def label(self) -> str:
        return "Memory" if self is TierKind.MEMORY else self.value.replace("_", "-").capitalize()


class Placement(StrEnum):
    """Where the data should be read from while the job runs (the API's `storage.kind`)."""

    MEMORY = "memory"
    NODE_LOCAL = "node_local"
    SHARED = "shared"


class DataKind(StrEnum):
    """What the data path names: it decides how the job stages it."""

    FOLDER = "folder"
    ARCHIVE = "archive"
    FILE = "file"
    # A folder of tar archives of a few GB each, which the program reads one after another as
    # streams (WebDataset-style): many small files kept as few large ones (001).
    SHARDS = "shards"

    @property
    def label(self) -> str:
        return {
            "folder": "A folder",
            "archive": f"An archive ({suffixes_in_words()})",
            "file": "A single file",
            "shards": "A folder of shards (.tar files read as streams)",
        }[self.value]

    @classmethod
    def in_words(cls) -> str:
        """Every label in one phrase: "a folder, an archive (.tar, ...) or a single file"."""
        *most, last = (kind.label[0].lower() + kind.label[1:] for kind in cls)
        return f"{', '.join(most)} or {last}"


class PythonBuilder(StrEnum):
    """How a site builds a virtualenv inside a job."""

    VENV = "venv"  # python3 -m venv, then pip from the package index the site configures
    WHEELHOUSE = "wheelhouse"  # virtualenv --no-download, then pip --no-index: the site's wheels

    @property
    def label(self) -> str:
        return {
            "venv": "python3 -m venv and pip",
            "wheelhouse": "virtualenv --no-download and pip --no-index (the site's wheels)",
        }[self.value]


class Launch(StrEnum):
    """How the user's command starts its processes on the job's nodes."""

    NODE = "node"  # the script starts it once on every node: python, torchrun, accelerate launch
    GPU_TASKS = "gpu-tasks"  # it starts one task per GPU itself: srun python, mpirun
    NODE_TASKS = "node-tasks"  # it starts one launcher per node itself: srun torchrun

    @property
    def label(self) -> str:
        return {
            "node": "Once on every node, started by the script (python, torchrun, accelerate "
            "launch)",
            "gpu-tasks": "It starts one task per GPU itself (srun python ..., mpirun)",
            "node-tasks": "It starts one launcher per node itself (srun torchrun ...)",
        }[self.value]


class Scheduler(StrEnum):
    SLURM = "slurm"
    RUNAI = "runai"

    @property
    def label(self) -> str:
        return {"slurm": "Slurm", "runai": "Run:ai"}[self.value]


# --- The cluster, as its admins published it ---------------------------------------------


@dataclass(frozen=True)
class GpuType:
    name: str
    memory_gb: float
    relative_speed: float = 1.0
    # The cluster asks for near-full utilization on these cards (000: A6000 and A100).
    expects_full_utilization: bool = False
    source: Source | None = None


@dataclass(frozen=True)
class Partition:
    name: str
    gpu_type: str
    gpus_per_node: int
    cpus_per_node: int
    memory_per_node_mb: int
    max_hours: float
    default_hours: float = 1.0
    # Workloads this node type is set aside for; empty means any workload.
    purposes: frozenset[Workload] = frozenset()
    # The Slurm partition to ask for; empty when Slurm routes by `--gres` type alone.
    slurm_partition: str = ""
    source: Source | None = None  # the hardware
    # Where the purposes and the time limit are stated; None: not stated (the hardware's source
    # is cited instead, where the rule needs one).
    purpose_source: Source | None = None
    hours_source: Source | None = None
    # Node-local storage a job on this node type can count on, where the site publishes it;
    # None: not published, the policy's generic node-local limit applies.
    node_local_gb: float | None = None


@dataclass(frozen=True)
class StorageTier:
    name: str
    kind: TierKind
    path: str
    quota_bytes: int | None = None
    quota_files: int | None = None
    purge_policy: str = ""
    persistent: bool = True
    # Created for each job and removed by the scheduler when it ends (e.g. $SLURM_TMPDIR).
    per_job: bool = False
    source: Source | None = None


@dataclass(frozen=True)
class Policy:
    in_memory_limit_gb: float = 10
    node_local_limit_gb: float = 100
    # The site asks for training data on node-local storage whatever its size (000).
    stages_training_data: bool = False
    checkpoint_chunk_hours: float = 24
    cpus_per_gpu: int = 6
    memory_per_gpu_mb: int = 32000
    utilization_target_percent: int = 90
    many_files_threshold: int = 100_000
    small_file_kb: int = 300
    # The rest of the policy: a site's figures and rules besides the ratio below.
    source: Source | None = None
    # The ratio's two figures often come from different places (Béluga: memory from 002, CPUs
    # from its node table), so each has its own; None where nothing states it.
    cpus_source: Source | None = None
    memory_source: Source | None = None
    # Where the cluster's maximum job duration (Cluster.max_hours) is stated.
    max_hours_source: Source | None = None
    # Where results go unless the user says otherwise, as a path starts in jobs
    # ($PROJECT/results); "" where the site publishes none. Checkpoints too, without checkpoint_dir.
    results_dir: str = ""
    # Where checkpoints go, as a path starts in jobs ($SCRATCH/checkpoints): each job keeps them in
    # a folder there named by its job name, which every part of a chain shares. "" : with the
    # results ($RESULTS_DEST/checkpoints).
    checkpoint_dir: str = ""
    checkpoint_source: Source | None = None


@dataclass(frozen=True)
class JobEnvironment:
    """What the site gives every job, so that a script written for it runs there."""

    # (name, value): a variable the site sets in jobs, with the value a script may fall back on
    # when the login environment did not pass it; "" where only the scheduler can set it.
    variables: tuple[tuple[str, str], ...] = ()
    modules: bool = False  # `module load` works in jobs
    python_module: str = ""  # loaded before building a virtualenv, unless one is listed
    python_builder: PythonBuilder = PythonBuilder.VENV
    source: Source | None = None

    def sets(self, name: str) -> bool:
        return any(known == name for known, _ in self.variables)


class Rule(StrEnum):
    """A rule about job scripts that a site publishes; the script checker applies each only on
    the clusters whose guidance states it (from the guidance data, with the site's source)."""

    ACCOUNT_REQUIRED = "account_required"
    MEMORY_PER_GPU = "memory_per_gpu"
    CPUS_PER_GPU = "cpus_per_gpu"
    OFFLINE_COMPUTE_NODES = "offline_compute_nodes"
    AVOID_ANACONDA = "avoid_anaconda"
    CHECKPOINT_LONG_JOBS = "checkpoint_long_jobs"
    VENV_ON_NODE = "venv_on_node"

    @property
    def label(self) -> str:
        return {
            "account_required": "Every job names the account it is billed to (--account)",
            "memory_per_gpu": "Memory in proportion to GPUs, at most the policy's memory per GPU",
            "cpus_per_gpu": "CPUs in proportion to GPUs, at the policy's CPUs per GPU",
            "offline_compute_nodes": "Compute nodes have no internet access: install nothing "
            "from the internet in a job",
            "avoid_anaconda": "Avoid Anaconda: use virtualenv",
            "checkpoint_long_jobs": "Checkpoint long jobs and run them as chains of the "
            "policy's checkpoint chunk",
            "venv_on_node": "Build a virtualenv made in a job on the node's local storage",
        }[self.value]


@dataclass(frozen=True)
class SiteRule:
    rule: Rule
    source: Source | None = None


@dataclass(frozen=True)
class CodeRule:
    """An admin's setting of one training-code rule (guidance.engine.code_check.catalogue) on a
    cluster: switched off, reworded, or citing the site's own source."""

    rule: str  # a key of the catalogue
    enabled: bool = True
    wording: str = ""  # replaces the rule's message; "" keeps it
    source: Source | None = None  # None keeps the rule's own


@dataclass(frozen=True)
class Cluster:
    slug: str
    name: str
    scheduler: Scheduler = Scheduler.SLURM
    gpu_types: tuple[GpuType, ...] = ()
    partitions: tuple[Partition, ...] = ()
    storage_tiers: tuple[StorageTier, ...] = ()
    policy: Policy = field(default_factory=Policy)
    environment: JobEnvironment = field(default_factory=JobEnvironment)
    rules: tuple[SiteRule, ...] = ()
    code_rules: tuple[CodeRule, ...] = ()

    def rule(self, rule: Rule) -> SiteRule | None:
        """The site's statement of the rule, None where its guidance does not state it."""
        return next((r for r in self.rules if r.rule == rule), None)

    def gpu_type(self, name: str) -> GpuType | None:
        wanted = name.casefold()
        return next((g for g in self.gpu_types if g.name.casefold() == wanted), None)

    def tier(self, *kinds: TierKind) -> StorageTier | None:
        """The first published tier of the given kinds, in the order the kinds are given."""
        for kind in kinds:
            for tier in self.storage_tiers:
                if tier.kind == kind:
                    return tier
        return None

    @property
    def max_hours(self) -> float:
        return max((p.max_hours for p in self.partitions), default=0)

    @property
    def max_hours_source(self) -> Source | None:
        """Where the maximum job duration is stated: the policy's source for it, else that of
        the node type with the longest limit."""
        if self.policy.max_hours_source:
            return self.policy.max_hours_source
        longest = max(self.partitions, key=lambda p: p.max_hours, default=None)
        return longest.hours_source if longest else None


# --- What the user tells us about the job ------------------------------------------------


@dataclass(frozen=True)
class Overrides:
    """What the user sets by hand instead of the recommendation; None: recommend it."""

    partition: str | None = None  # a node type's name, or its Slurm partition
    minutes: int | None = None  # the time limit of each job
    memory_mb: int | None = None
    cpus_per_task: int | None = None


@dataclass(frozen=True)
class JobSpec:
    workload: Workload
    dataset_gb: float
    hours: float
    file_count: int = 0  # 0: not known
    data_location: TierKind | None = None
    data_path: str = ""  # as the user wrote it, e.g. $SCRATCH/imagenet
    data_kind: DataKind | None = None  # None: taken from the path's name
    gpu_type: str | None = None  # None: recommend one
    gpu_count: int = 1
    gpu_mem_gb: float | None = None
    checkpointing: bool = False
    multi_gpu: bool = False
    nodes: int = 1
    expects_full_utilization: bool = False
    similar_runs: int = 1
    # Its runs, each with its own parameters and folders; None: one run (or similar_runs
    # repeats, which the composer makes a sweep of their own).
    sweep: Sweep | None = None
    runs_at_once: int = 0  # the most of a sweep's jobs that may run at once; 0: no cap
    # The job builds a virtualenv on the node (from a requirements file): it keeps a folder there.
    builds_environment: bool = False
    command: str = ""  # as the user wrote it: it tells how the program starts (launch.py)
    launch: Launch | None = None  # None: told from the command
    results_dir: str = ""  # where results go, as the user wrote it
    overrides: Overrides = Overrides()


# --- What the engine says back -----------------------------------------------------------


@dataclass(frozen=True)
class Note:
    """A warning, an error or a tip, with a stable code for machines and words for people."""

    code: str
    message: str
    source: Source | None = None
    field: str | None = None


@dataclass(frozen=True)
class Step:
    """One thing the job script does, why, and on whose advice."""

    action: str
    command: str
    reason: str
    source: Source


@dataclass(frozen=True)
class CheckpointPlan:
    """Where the job's checkpoint files go, why, and on whose advice."""

    root: str  # the job's folder is root/<job name>; "": the results' own checkpoints folder
    reason: str
    source: Source | None = None
    tier: StorageTier | None = None

    def folder(self, job_name: str, results: str = "$RESULTS_DEST") -> str:
        """The job's checkpoint folder, as a path starts in jobs."""
        return f"{self.root}/{job_name}" if self.root else f"{results}/checkpoints"


@dataclass(frozen=True)
class StoragePlan:
    placement: Placement
    tier: StorageTier | None
    archive: bool
    reason: str
    source: Source
    staging: tuple[Step, ...] = ()
    copy_back: Step | None = None
    cleanup: Step | None = None  # removes the job's folder on the node, where no one else does
    # Where the job's results and checkpoints should end up, to outlive the job.
    results_tier: StorageTier | None = None
    data_kind: DataKind = DataKind.FOLDER
    # Holds the job's own folder on the node, should it keep one (the staged data, a virtualenv
    # built in the job); None, or a tier without a path: the node's own /tmp.
    work_tier: StorageTier | None = None
    checkpoints: CheckpointPlan | None = None

    @property
    def staged(self) -> bool:
        """The job copies the data to the node: a tier there holds it."""
        return self.placement != Placement.SHARED and self.tier is not None


@dataclass(frozen=True)
class RejectedPartition:
    partition: Partition
    why: str
    source: Source | None = None


@dataclass(frozen=True)
class PartitionChoice:
    partition: Partition
    gpu_type: GpuType
    reason: str
    source: Source | None
    alternatives: tuple[RejectedPartition, ...] = ()


@dataclass(frozen=True)
class Amount:
    value: int
    reason: str
    source: Source | None = None
    recommended: int | None = None  # set by hand: what the engine would have asked for


@dataclass(frozen=True)
class Resources:
    nodes: Amount
    gpus_per_node: Amount
    tasks_per_node: Amount
    cpus_per_task: Amount
    memory_mb: Amount
    minutes: Amount  # per job; a chain repeats it

    @property
    def time(self) -> str:
        """Slurm's D-HH:MM:SS."""
        return format_time(self.minutes.value * 60, days=True)

    @property
    def mem(self) -> str:
        return f"{self.memory_mb.value}M"


@dataclass(frozen=True)
class LaunchPlan:
    launch: Launch
    reason: str
    told: bool  # the user chose it; otherwise the command's words told
    source: Source


@dataclass(frozen=True)
class ChainPlan:
    jobs: int
    hours_per_job: float
    reason: str
    source: Source

    @property
    def array(self) -> str:
        return f"1-{self.jobs}%1"


@dataclass(frozen=True)
class Recommendation:
    cluster: Cluster
    spec: JobSpec
    errors: tuple[Note, ...] = ()
    warnings: tuple[Note, ...] = ()
    tips: tuple[Note, ...] = ()
    storage: StoragePlan | None = None
    choice: PartitionChoice | None = None
    resources: Resources | None = None
    chain: ChainPlan | None = None
    launch: LaunchPlan | None = None
    sweep: SweepPlan | None = None  # how a sweep's runs are grouped into jobs
    # The cluster takes no Slurm scripts (e.g. Run:ai): the advice stands, no script is made.
    guidance_only: bool = False

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def gpu_hours(self) -> GpuHours | None:
        """What the composition asks for in all, before it runs; None without resources."""
        if self.resources is None or self.guidance_only:
            return None
        r = self.resources
        return GpuHours(
            gpus=r.nodes.value * r.gpus_per_node.value,
            hours=r.minutes.value / 60,
            parts=self.chain.jobs if self.chain else 1,
            jobs=self.sweep.jobs if self.sweep else 1,
            runs=len(self.spec.sweep.runs) if self.spec.sweep and self.sweep else 1,
        )
