"""The recommendation engine: pure Python, no Django. `recommend(spec, cluster)` is the way in."""

from guidance.engine.recommend import recommend
from guidance.engine.types import (
    Cluster,
    DataKind,
    GpuType,
    JobEnvironment,
    JobSpec,
    Partition,
    Placement,
    Policy,
    PythonBuilder,
    Recommendation,
    Scheduler,
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
    "Partition",
    "Placement",
    "Policy",
    "PythonBuilder",
    "Recommendation",
    "Scheduler",
    "StorageTier",
    "TierKind",
    "Workload",
    "recommend",
]
