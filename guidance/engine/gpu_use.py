"""What a job's GPU use says about the job: idle GPUs, use under the cluster's target, and the
guidance's advice for both. Pure: the caller measures (jobs.gpu.efficiency reads the samples)."""

import math
from collections.abc import Sequence
from dataclasses import dataclass

from guidance.engine import sources
from guidance.engine.sources import DOC_DGX, Source
from guidance.engine.types import Cluster, GpuType, Note

# Under this mean a GPU counts as doing nothing: an idle card still reads 0-1%.
IDLE_PERCENT = 1.0
JOULES_PER_KWH = 3_600_000

# 003 works the sum: 71 GPUs at 35% are the work of 28 at 90%.
FEWER_GPUS = Source(DOC_DGX, "The issue visualized")
CHECK_UTILIZATION = Source(DOC_DGX, "Section 1: How to check GPU utilization / On a local machine")


@dataclass(frozen=True)
class GpuUse:
    """One GPU's use over the measured span (after the warm-up for warnings, all for reports)."""

    node: str
    index: int | None = None
    name: str = ""
    mean: float | None = None  # % busy over `seconds`; None: unknown
    seconds: float = 0  # sampled time with a known utilization
    sampled_seconds: float = 0  # all sampled time, unknown utilization included
    under_seconds: float = 0  # known time under the target
    mig: bool = False
    memory_total_mb: float | None = None
    peak_memory_mb: float | None = None
    task_id: str = ""
    energy_j: float | None = None  # over the whole run, from NVML's counter; None: unknown

    @property
    def label(self) -> str:
        which = f"GPU {self.index}" if self.index is not None else (self.name or "A GPU")
        part = f" (part {self.task_id})" if self.task_id else ""
        return f"{which} on {self.node}{part}"

    @property
    def peak_memory_gb(self) -> float | None:
        return None if self.peak_memory_mb is None else mib_to_gb(self.peak_memory_mb)

    @property
    def memory_total_gb(self) -> float | None:
        return mib_to_gb(self.memory_total_mb) if self.memory_total_mb else None

    @property
    def energy_kwh(self) -> float | None:
        return None if self.energy_j is None else self.energy_j / JOULES_PER_KWH

    @property
    def known(self) -> bool:
        return self.mean is not None and self.seconds > 0

    @property
    def idle(self) -> bool:
        return self.known and self.mean < IDLE_PERCENT


@dataclass(frozen=True)
class GpuAdvice:
    warnings: tuple[Note, ...] = ()
    tips: tuple[Note, ...] = ()
    unknown: tuple[Note, ...] = ()

    @property
    def text(self) -> str:
        """The warnings in one line, as Job.gpu_warning keeps them for lists and badges."""
        return " ".join(note.message for note in self.warnings)


def mean_of(uses: Sequence[GpuUse]) -> float | None:
    """The GPUs' mean use, each GPU counting once; None when no GPU's use is known."""
    known = [u.mean for u in uses if u.known]
    return sum(known) / len(known) if known else None


def gpus_needed(gpus: int, mean: float, target: float) -> int:
    """How many GPUs at `target`% do the work of `gpus` at `mean`%: at least one."""
    return max(1, math.ceil(round(gpus * mean / target, 6)))


def advise(
    uses: Sequence[GpuUse],
    cluster: Cluster,
    *,
    ran_seconds: float,
    warmup_seconds: float,
    cpus: int | None = None,
    gpu_type: str = "",
) -> GpuAdvice:
    """Warnings (with the guidance's advice as tips) once the job has run past its warm-up."""
    unknown = tuple(_unknown(u) for u in uses if u.mig or (u.sampled_seconds and not u.known))
    if ran_seconds < warmup_seconds:
        return GpuAdvice(unknown=unknown)
    warnings = [_idle(u, uses) for u in uses if u.idle]
    tips: list[Note] = []
    target = cluster.policy.utilization_target_percent
    mean = mean_of(uses)
    busy = [u for u in uses if u.known and not u.idle]
    if mean is not None and mean < target and busy:
        warnings.append(_under_target(uses, mean, target))
        tips = _tips(uses, mean, cluster, cpus, gpu_type)
    return GpuAdvice(tuple(warnings), tuple(tips), unknown)


def _unknown(use: GpuUse) -> Note:
    if use.mig:
        return Note(
            "utilization_unknown",
            f"{use.label} is a MIG slice: NVIDIA reports no compute utilization for a slice, "
            "so how busy it is stays unknown here (its memory use is shown).",
        )
    return Note(
        "utilization_unknown",
        f"{use.label} reports no compute utilization: how busy it is stays unknown here.",
    )


def _idle(use: GpuUse, uses: Sequence[GpuUse]) -> Note:
    head = f"{use.label} has done nothing for {describe_seconds(use.seconds)}"
    if any(u.known and not u.idle for u in uses):
        return Note(
            "gpu_idle",
            f"{head}: the program uses only some of the job's GPUs. Ask for the GPUs it uses, "
            "or start it on all of them (DistributedDataParallel with torchrun or srun); by "
            "default PyTorch and TensorFlow use one GPU.",
            sources.SBATCH_ELEMENTS,
        )
    return Note(
        "gpu_idle",
        f"{head}: check that the program puts its model and data on the GPU "
        '(device="cuda") and is not waiting for input; nvidia-smi -l 1 on the node shows '
        "whether the GPU works.",
        CHECK_UTILIZATION,
    )


def _under_target(uses: Sequence[GpuUse], mean: float, target: int) -> Note:
    count = sum(1 for u in uses if u.known)
    whose = "Your GPU is" if count == 1 else f"Your {count} GPUs are"
    return Note(
        "under_target",
        f"{whose} {mean:.0f}% busy on average; the cluster asks for more than {target}%.",
        sources.UTILIZATION_TARGET,
    )


def _tips(
    uses: Sequence[GpuUse], mean: float, cluster: Cluster, cpus: int | None, gpu_type: str
) -> list[Note]:
    policy = cluster.policy
    gpus = sum(1 for u in uses if u.known)
    tips = []
    needed = gpus_needed(gpus, mean, policy.utilization_target_percent)
    if needed < gpus:
        tips.append(
            Note(
                "fewer_gpus",
                f"Ask for {_gpus(needed)} instead of {gpus}: at {mean:.0f}% busy, {needed} "
                f"at {policy.utilization_target_percent}% would do the same work.",
                FEWER_GPUS,
            )
        )
    tips.append(Note("dataloader", _dataloader(uses, gpus, cpus, cluster), sources.DATALOADER))
    tips.append(
        Note(
            "no_brainer_tweaks",
            "Switch on what costs nothing: torch.backends.cudnn.benchmark = True, TF32 "
            "(torch.backends.cuda.matmul.allow_tf32 = True and torch.backends.cudnn.allow_tf32 "
            "= True), model.zero_grad(set_to_none=True), tensors created on the GPU "
            '(device="cuda") and torch.no_grad() for validation.',
            sources.NO_BRAINER_TWEAKS,
        )
    )
    several = (
        " With several GPUs, use DistributedDataParallel (torchrun or srun), not DataParallel."
        if gpus > 1
        else ""
    )
    tips.append(
        Note(
            "mixed_precision",
            "Once the model is stable, try automatic mixed precision "
            '(with torch.autocast(device_type="cuda"):): often twice the speed at half the '
            f"memory; torch.compile can add more.{several}",
            sources.CAREFUL_TWEAKS,
        )
    )
    if other := other_gpu_type(cluster, gpu_type, peak_memory_gb(uses)):
        current = find_gpu_type(cluster, gpu_type)
        tips.append(
            Note(
                "use_other_gpu_type",
                f"{cluster.name} asks for near-100% GPU utilization on {current.name}; if the "
                f"code cannot get there, use {other.name} nodes instead.",
                current.source or sources.PROCESSING_TRAINING,
            )
        )
    return tips


def _dataloader(uses: Sequence[GpuUse], gpus: int, cpus: int | None, cluster: Cluster) -> str:
    if cpus:
        per_gpu = max(1, cpus // gpus)
        workers = (
            f"num_workers={cpus} (the {cpus} CPUs the job has)"
            if gpus == 1
            else f"num_workers={per_gpu} in each GPU's process ({cpus} CPUs for {gpus} GPUs)"
        )
    else:
        per_gpu = cluster.policy.cpus_per_gpu
        workers = f"num_workers={per_gpu} per GPU ({cluster.name}'s {per_gpu} CPUs per GPU)"
    room = ""
    peak, total = peak_memory_gb(uses), card_memory_gb(uses)
    if peak is not None and total and peak < total / 2:
        room = f"; it used at most {peak:.0f} of {total:.0f} GB, so a larger batch fits"
    return (
        f"Feed the GPU faster: DataLoader({workers}, pin_memory=True, persistent_workers=True, "
        f"prefetch_factor=4) and the largest batch_size that fits in GPU memory{room}."
    )


def find_gpu_type(cluster: Cluster, name: str) -> GpuType | None:
    wanted = name.strip().lower()
    return next((g for g in cluster.gpu_types if g.name.lower() == wanted), None) if name else None


def other_gpu_type(cluster: Cluster, gpu_type: str, peak_gb: float | None) -> GpuType | None:
    """000: A100 and A6000 only at near-100% utilization, "please use an RTX node instead".

    The data says which cards the cluster keeps for busy jobs; the way out is the fastest card
    that is not, on a node type open to any work (roentgen is for debugging, 2080ti for
    inference), with the memory the job used."""
    current = find_gpu_type(cluster, gpu_type)
    if current is None or not current.expects_full_utilization:
        return None
    open_to_all = {p.gpu_type for p in cluster.partitions if not p.purposes}
    fits = [
        g
        for g in cluster.gpu_types
        if not g.expects_full_utilization
        and g.name in open_to_all
        and (peak_gb is None or g.memory_gb >= peak_gb)
    ]
    return max(fits, key=lambda g: g.relative_speed, default=None)


def peak_memory_gb(uses: Sequence[GpuUse]) -> float | None:
    peaks = [u.peak_memory_mb for u in uses if u.peak_memory_mb is not None]
    return mib_to_gb(max(peaks)) if peaks else None


def card_memory_gb(uses: Sequence[GpuUse]) -> float | None:
    totals = [u.memory_total_mb for u in uses if u.memory_total_mb]
    return mib_to_gb(min(totals)) if totals else None


def mib_to_gb(mib: float) -> float:
    # NVML counts MiB, and cards are sold by GiB: an "80 GB" A100 reports 81920 MiB.
    return mib / 1024


def describe_seconds(seconds: float) -> str:
    minutes = round(seconds / 60)
    if minutes < 1:
        return "under a minute"
    if minutes < 120:
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{minutes / 60:.1f} hours".replace(".0 hours", " hours")


def _gpus(count: int) -> str:
    return f"{count} GPU{'s' if count != 1 else ''}"
