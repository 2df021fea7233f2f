"""The advice engine: pure Python, no Django. `recommend(spec, cluster)` plans a job; the advice
given outside a plan has its own module (gpu_use, efficiency, data_path, slurm_refusals,
script_check)."""

from guidance.engine.recommend import recommend
from guidance.engine.types import (
    Cluster,
    DataKind,
    GpuType,
    JobEnvironment,
    JobSpec,
    Launch,
    Overrides,
    Partition,
    Placement,
    Policy,
    PythonBuilder,
    Recommendation,
    Rule,
    Scheduler,
    SiteRule,
    StorageTier,
    TierKind,
    Workload,
)

__all__ = [
    "Cluster",
    "DataKind",
    "GpuType",
    "JobEnvironment",
    "JobSpec",
    "Launch",
    "Overrides",
    "Partition",
    "Placement",
    "Policy",
    "PythonBuilder",
    "Recommendation",
    "Rule",
    "Scheduler",
    "SiteRule",
    "StorageTier",
    "TierKind",
    "Workload",
    "recommend",
]
