"""The guidance the portal starts with, taken from shared/guidance-docs.

Pure data, loaded into the database by `manage.py seed_guidance` (only what is missing, so admins'
edits survive) and used as-is by the engine's tests. Numbers that the documents do not give come
from the clusters' public documentation, and each such object's note says so.
"""

from dataclasses import dataclass, field, replace
from pathlib import Path

from guidance.engine import sources
from guidance.engine.sources import Source
from guidance.engine.types import (
    Cluster,
    GpuType,
    JobEnvironment,
    Partition,
    Policy,
    PythonBuilder,
    Rule,
    Scheduler,
    SiteRule,
    StorageTier,
    TierKind,
    Workload,
)

ARTICLES_DIR = Path(__file__).parent / "seed_articles"
GB = 1000**3
TB = 1000**4
HOURS_PER_DAY = 24

PUBLIC_DOCS = (
    "From the cluster's public documentation (the guidance documents do not give this number)."
)
SPEC_SHEET = (
    "GPU memory and speed from the card's public specification; the guidance document names only "
    "the model. Relative speed is an estimate for ranking (A100 = 1.0)."
)


@dataclass(frozen=True)
class SeedArticle:
    slug: str
    title: str
    source: Source
    clusters: tuple[str, ...]  # empty: every cluster
    order: int  # the cluster's own articles first, general ones after

    @property
    def body(self) -> str:
        return (ARTICLES_DIR / f"{self.slug}.md").read_text()


@dataclass(frozen=True)
class SeedCluster:
    facts: Cluster
    description: str
    source: Source
    note: str = ""
    login_host: str = ""
    # Admin notes for single objects, keyed by GPU type, partition or storage tier name.
    notes: dict[str, str] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)  # GPU type name -> card model


# --- The processing cluster (000) ---------------------------------------------------------

_PROCESSING_GPUS = (
    GpuType("a100", 80, 1.0, True, sources.PROCESSING_TRAINING),
    GpuType("a6000", 48, 0.75, True, sources.PROCESSING_TRAINING),
    GpuType("rtx", 24, 0.6, False, sources.PROCESSING_TRAINING),
    GpuType("roentgen", 48, 0.45, False, sources.PROCESSING_TRAINING),
    GpuType("2080ti", 11, 0.35, False, sources.PROCESSING_INFERENCE),
)


def _processing_node(
    name: str, gpus: int, cpus: int, memory_mb: int, purpose: Workload | None = None
) -> Partition:
    # 000 names each GPU and what some are for, but gives no node layout and no time limit:
    # those are placeholders, cited as such.
    return Partition(
        name,
        gpu_type=name,
        gpus_per_node=gpus,
        cpus_per_node=cpus,
        memory_per_node_mb=memory_mb,
        max_hours=7 * HOURS_PER_DAY,
        default_hours=1,
        purposes=frozenset({purpose}) if purpose else frozenset(),
        source=sources.PORTAL_PLACEHOLDERS,
        purpose_source={
            Workload.DEBUGGING: sources.PROCESSING_TRAINING,
            Workload.INFERENCE: sources.PROCESSING_INFERENCE,
        }.get(purpose),
        hours_source=sources.PORTAL_PLACEHOLDERS,
    )


PROCESSING = SeedCluster(
    Cluster(
        "processing",
        "Processing GPU cluster",
        Scheduler.SLURM,
        gpu_types=_PROCESSING_GPUS,
        partitions=(
            _processing_node("a100", 4, 64, 512_000),
            _processing_node("a6000", 8, 64, 512_000),
            _processing_node("rtx", 8, 48, 256_000),
            _processing_node("roentgen", 8, 48, 256_000, Workload.DEBUGGING),
            _processing_node("2080ti", 8, 32, 192_000, Workload.INFERENCE),
        ),
        storage_tiers=(
            StorageTier(
                "Local SSD scratch (/processing/$USER)",
                TierKind.NODE_LOCAL,
                "$SCRATCH",
                purge_policy="Wiped periodically, oldest files first, when the disk gets full. "
                "Visible on the login hosts under /mnt/processing/<hostname>.",
                persistent=False,
                per_job=False,
                source=sources.PROCESSING_STAGING,
            ),
            StorageTier(
                "Project data folders",
                TierKind.PROJECT,
                "",  # 000 names no path
                purge_policy="Persistent: keep training artifacts here.",
                persistent=True,
                source=sources.PROCESSING_CLEANUP,
            ),
        ),
        # 000 gives no CPUs or memory per GPU: the portal's defaults (002's suggestions for one
        # GPU) stand in. 000 keeps training artifacts in the project data folders but names no
        # path for them: no default results directory. 000 copies training data to the node's
        # SSD before training, whatever its size. 000 says nothing of checkpoints, and its scratch
        # (/processing/, $SCRATCH) is the one node's disk and may be wiped when it fills: a
        # chain's next part may run on another node, and a wiped checkpoint cannot be resumed
        # from. So checkpoints stay with the results (no checkpoint directory), for that reason.
        policy=Policy(
            cpus_per_gpu=6,
            memory_per_gpu_mb=32000,
            stages_training_data=True,
            source=sources.PROCESSING_STAGING,
            cpus_source=sources.PORTAL_DEFAULTS,
            memory_source=sources.PORTAL_DEFAULTS,
            max_hours_source=sources.PORTAL_PLACEHOLDERS,
            checkpoint_source=sources.PROCESSING_SCRATCH,
        ),
        # 000: $SCRATCH is /processing/<user> on the node; no SLURM_TMPDIR, no modules named.
        environment=JobEnvironment(
            variables=(("SCRATCH", "/processing/$USER"),),
            python_builder=PythonBuilder.VENV,
            source=sources.PROCESSING_SCRATCH,
        ),
    ),
    description=(
        "A GPU cluster whose nodes each have fast SSD scratch in RAID-6 under `/processing/`. "
        "Copy training data to `$SCRATCH` on the node and train from there, not from the "
        "network; inference may read from network storage. Use A6000 and A100 only at near-100% "
        "GPU utilization, RTX otherwise; debug 48 GB models on roentgen; run inference under "
        "11 GB on 2080ti."
    ),
    source=sources.PROCESSING_SCRATCH,
    note=(
        "Node counts, CPUs, memory per node, the 7-day limit, CPUs and memory per GPU are not in "
        "the document (000): placeholders until the cluster's admins publish theirs (per GPU: "
        "the federation tutorial's suggestions, 6 CPUs and 32000M). Slurm "
        "partition names are unknown: jobs ask for the GPU type with --gres."
    ),
    notes={
        "a100": SPEC_SHEET,
        "a6000": SPEC_SHEET,
        "rtx": SPEC_SHEET + " RTX 3090 assumed.",
        "roentgen": SPEC_SHEET + " The document says: slower 48 GB GPUs than the A6000.",
        "2080ti": SPEC_SHEET,
    },
    models={
        "a100": "NVIDIA A100 80GB",
        "a6000": "NVIDIA RTX A6000 48GB",
        "rtx": "NVIDIA GeForce RTX 3090 24GB",
        "roentgen": "48 GB (slower than A6000)",
        "2080ti": "NVIDIA GeForce RTX 2080 Ti 11GB",
    },
)


# --- The federation's clusters (001, 002, 004) ---------------------------------------------


def _federation_tiers() -> tuple[StorageTier, ...]:
    return (
        StorageTier(
            "Home",
            TierKind.HOME,
            "$HOME",
            50 * GB,
            500_000,
            "Backed up; for source code, parameter files and job scripts.",
            persistent=True,
            source=sources.STORAGE_AREAS,
        ),
        StorageTier(
            "Scratch",
            TierKind.SCRATCH,
            "/scratch/$USER",
            20 * TB,
            1_000_000,
            "Not backed up; files unused for 60 days are purged. For large files (>100 MB), "
            "checkpoints and job output.",
            persistent=False,
            source=sources.STORAGE_AREAS,
        ),
        StorageTier(
            "Project",
            TierKind.PROJECT,
            "$HOME/projects/def-$ACCOUNT",
            1 * TB,
            500_000,
            "Shared by the group, backed up; for datasets kept as large archives. Quota per group.",
            persistent=True,
            source=sources.STORAGE_AREAS,
        ),
        StorageTier(
            "Node-local job directory",
            TierKind.NODE_LOCAL,
            "$SLURM_TMPDIR",
            purge_policy="Created for each job on each node and removed when the job ends; "
            "space depends on the node type.",
            persistent=False,
            per_job=True,
            source=sources.DATASET_SIZE_TIERS,
        ),
        StorageTier(
            "RAM disk",
            TierKind.MEMORY,
            "/tmp",
            purge_policy="tmpfs, cleared when the job ends; counts against the job's memory.",
            persistent=False,
            per_job=True,
            source=sources.RAM_DISK,
        ),
        StorageTier(
            "Nearline",
            TierKind.NEARLINE,
            "/nearline/def-$ACCOUNT",
            2 * TB,
            5_000,
            "Tape-backed: for archives that are rarely read. Quota per group.",
            persistent=True,
            source=sources.STORAGE_AREAS,
        ),
    )


# 004: $SLURM_TMPDIR per job and node, $SCRATCH and $PROJECT, `module load`, and virtualenvs built
# in the job from the site's wheels (virtualenv --no-download, pip install --no-index).
FEDERATION_JOB_ENVIRONMENT = JobEnvironment(
    variables=(("SLURM_TMPDIR", ""), ("SCRATCH", "/scratch/$USER"), ("PROJECT", "")),
    modules=True,
    python_module="python",
    python_builder=PythonBuilder.WHEELHOUSE,
    source=sources.VENV_IN_JOB,
)


FEDERATION_RESULTS_DIR = "$PROJECT/results"
# 004 keeps checkpoint files on scratch (temporary files of intensive I/O), as 002's chain example
# does (~/scratch/checkpoints/<run>): a folder per job name there, shared by a chain's parts.
FEDERATION_CHECKPOINT_DIR = "$SCRATCH/checkpoints"

# What the federation's documents ask of every job script; the processing cluster's (000) asks
# none of these, so the checker does not hold its scripts to them.
FEDERATION_RULES = (
    SiteRule(Rule.ACCOUNT_REQUIRED, sources.SBATCH_ELEMENTS),
    SiteRule(Rule.MEMORY_PER_GPU, sources.SBATCH_ELEMENTS),
    SiteRule(Rule.CPUS_PER_GPU, sources.SBATCH_ELEMENTS),
    SiteRule(Rule.OFFLINE_COMPUTE_NODES, sources.INTERACTIVE_FIRST),
    SiteRule(Rule.AVOID_ANACONDA, sources.AVOID_ANACONDA),
    SiteRule(Rule.CHECKPOINT_LONG_JOBS, sources.LONG_RUNNING),
    SiteRule(Rule.VENV_ON_NODE, sources.VENV_IN_JOB),
)
# Node-local storage per node type (Partition.node_local_gb) is not seeded: 004 says only that
# it depends on the node type, and 001 that a job may find anything from none to a terabyte free.


@dataclass(frozen=True)
class _Figure:
    """A federation cluster's figure and where it is stated."""

    value: int
    source: Source


def _federation(
    slug: str,
    name: str,
    cpus_per_gpu: _Figure,
    memory_per_gpu_mb: _Figure,
    max_days: _Figure,
    gpus: tuple[GpuType, ...],
    partitions: tuple[Partition, ...],
    description: str,
    note: str,
    models: dict[str, str],
) -> SeedCluster:
    return SeedCluster(
        Cluster(
            slug,
            name,
            Scheduler.SLURM,
            gpu_types=gpus,
            # The node tables give the hardware; the time limit is where max_days says.
            partitions=tuple(replace(p, hours_source=max_days.source) for p in partitions),
            storage_tiers=_federation_tiers(),
            policy=Policy(
                cpus_per_gpu=cpus_per_gpu.value,
                memory_per_gpu_mb=memory_per_gpu_mb.value,
                # 004: home for code and small files (50 GB); datasets and what jobs keep in
                # the group's project space, which jobs reach as $PROJECT.
                results_dir=FEDERATION_RESULTS_DIR,
                checkpoint_dir=FEDERATION_CHECKPOINT_DIR,
                checkpoint_source=sources.STORAGE_AREAS,
                source=sources.STORAGE_AREAS,
                cpus_source=cpus_per_gpu.source,
                memory_source=memory_per_gpu_mb.source,
                max_hours_source=max_days.source,
            ),
            environment=FEDERATION_JOB_ENVIRONMENT,
            rules=FEDERATION_RULES,
        ),
        description=f"{description} Jobs run at most {max_days.value} days.",
        source=max_days.source,  # what the description states beyond the GPU models
        note=note,
        login_host=f"{slug}.alliancecan.ca",
        notes={g.name: PUBLIC_DOCS for g in gpus} | {p.name: PUBLIC_DOCS for p in partitions},
        models=models,
    )


def _gpu(name: str, memory_gb: float, relative_speed: float) -> GpuType:
    return GpuType(name, memory_gb, relative_speed, source=sources.PUBLIC_HARDWARE)


def _node(name: str, gpus: int, cpus: int, memory_mb: int, days: int) -> Partition:
    # Slurm on the federation routes a job by its --gres type: no partition is named.
    return Partition(
        name, name, gpus, cpus, memory_mb, days * HOURS_PER_DAY, 1, source=sources.PUBLIC_HARDWARE
    )


NARVAL = _federation(
    "narval",
    "Narval",
    _Figure(12, sources.PUBLIC_HARDWARE),
    _Figure(124_500, sources.PUBLIC_HARDWARE),
    _Figure(7, sources.NOTES_SBATCH_ELEMENTS),
    (_gpu("a100", 40, 1.0),),
    (_node("a100", 4, 48, 498_000, 7),),
    "A federation cluster with NVIDIA A100 GPUs.",
    "7-day maximum from 004. GPU model, node layout, CPUs per GPU (12) and memory per GPU "
    "(124500M, the node's share per GPU) from the cluster's public documentation.",
    {"a100": "NVIDIA A100-SXM4 40GB"},
)

BELUGA = _federation(
    "beluga",
    "Béluga",
    _Figure(10, sources.PUBLIC_HARDWARE),
    _Figure(47_000, sources.SBATCH_EXAMPLE),
    _Figure(7, sources.SBATCH_ELEMENTS),
    (_gpu("v100", 16, 0.45),),
    (_node("v100", 4, 40, 186_000, 7),),
    "A federation cluster with NVIDIA V100 GPUs.",
    "7-day maximum and 47000M per GPU from 002. GPU model, node layout and CPUs per GPU (10) "
    "from the cluster's public documentation.",
    {"v100": "NVIDIA V100-SXM2 16GB"},
)

CEDAR = _federation(
    "cedar",
    "Cedar",
    _Figure(6, sources.SBATCH_ELEMENTS),
    _Figure(32_000, sources.SBATCH_EXAMPLE),
    _Figure(28, sources.SBATCH_ELEMENTS),
    (_gpu("p100", 12, 0.3), _gpu("p100l", 16, 0.3), _gpu("v100l", 32, 0.45)),
    (
        _node("p100", 4, 24, 125_000, 28),
        _node("p100l", 4, 24, 250_000, 28),
        _node("v100l", 4, 32, 187_000, 28),
    ),
    "A federation cluster with NVIDIA P100 and V100 GPUs.",
    "28-day maximum, 32000M and 6 CPUs per GPU from 002. GPU models and node layouts from the "
    "cluster's public documentation.",
    {"p100": "NVIDIA P100 12GB", "p100l": "NVIDIA P100 16GB", "v100l": "NVIDIA V100 32GB"},
)

GRAHAM = _federation(
    "graham",
    "Graham",
    _Figure(16, sources.PUBLIC_HARDWARE),
    _Figure(64_000, sources.SBATCH_EXAMPLE),
    _Figure(28, sources.SBATCH_ELEMENTS),
    (_gpu("p100", 12, 0.3), _gpu("v100", 16, 0.45), _gpu("t4", 16, 0.25)),
    (
        _node("p100", 2, 32, 127_000, 28),
        _node("v100", 8, 28, 183_000, 28),
        _node("t4", 4, 44, 192_000, 28),
    ),
    "A federation cluster with NVIDIA P100, V100 and T4 GPUs.",
    "28-day maximum and 64000M per GPU from 002. GPU models, node layouts and CPUs per GPU (16) "
    "from the cluster's public documentation.",
    {"p100": "NVIDIA P100 12GB", "v100": "NVIDIA V100 16GB", "t4": "NVIDIA T4 16GB"},
)


# --- The DGX cluster (003) -----------------------------------------------------------------

DGX = SeedCluster(
    Cluster(
        "dgx",
        "DGX cluster",
        Scheduler.RUNAI,
        gpu_types=(GpuType("a100", 80, 1.0, True, sources.UTILIZATION_TARGET),),
        partitions=(
            Partition(
                "dgx-a100",
                "a100",
                8,
                128,
                1_000_000,
                7 * HOURS_PER_DAY,
                1,
                source=sources.PUBLIC_HARDWARE,
                hours_source=sources.PORTAL_PLACEHOLDERS,  # 003 states no time limit
            ),
        ),
        storage_tiers=(),
        # 003 gives the utilization target only: the share per GPU is the node's split.
        policy=Policy(
            cpus_per_gpu=16,
            memory_per_gpu_mb=125_000,
            utilization_target_percent=90,
            source=sources.UTILIZATION_TARGET,
            cpus_source=sources.PUBLIC_HARDWARE,
            memory_source=sources.PUBLIC_HARDWARE,
            max_hours_source=sources.PORTAL_PLACEHOLDERS,
        ),
    ),
    description=(
        "NVIDIA DGX nodes scheduled by Run:ai, not Slurm: the portal gives advice for it but "
        "writes no job script. Aim for more than 90% GPU compute utilization; check it in the "
        "Run:ai dashboard under Workloads, your job, Metrics, GPU compute utilization."
    ),
    source=sources.RUNAI,
    note=(
        "Utilization target (>90%) from 003. Node layout (8 x A100 80GB, 128 CPUs, 1 TB) from "
        "NVIDIA's public DGX A100 specification; the document names no hardware. The 7-day "
        "limit is a placeholder: 003 states none."
    ),
    notes={"a100": SPEC_SHEET},
    models={"a100": "NVIDIA A100-SXM4 80GB"},
)

CLUSTERS = (PROCESSING, NARVAL, BELUGA, CEDAR, GRAHAM, DGX)
FEDERATION = ("narval", "beluga", "cedar", "graham")


# --- Guidance articles ---------------------------------------------------------------------

ARTICLES = (
    SeedArticle(
        "stage-data-to-local-scratch",
        "Stage your data to the node's local scratch",
        sources.PROCESSING_STAGING,
        ("processing",),
        10,
    ),
    SeedArticle(
        "choose-a-gpu",
        "Which GPU to use",
        sources.PROCESSING_TRAINING,
        ("processing",),
        20,
    ),
    SeedArticle(
        "where-your-dataset-should-live",
        "Where your dataset should live during a job",
        sources.DATASET_SIZE_TIERS,
        FEDERATION,
        10,
    ),
    SeedArticle(
        "checkpoint-long-jobs",
        "Checkpoint long jobs in {{ policy.checkpoint_chunk_hours }}-hour chains",
        sources.CHECKPOINT_CHAIN,
        FEDERATION,
        20,
    ),
    SeedArticle(
        "keep-gpus-busy",
        "Keep your GPUs more than {{ policy.utilization_target_percent }}% busy",
        sources.UTILIZATION_TARGET,
        (),
        50,
    ),
)
