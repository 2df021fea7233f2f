"""Shared by the engine's table tests: run the engine on a seeded cluster with a few fields set."""

import dataclasses

from guidance import seed
from guidance.engine import JobSpec, Recommendation, Workload, recommend
from guidance.engine.types import GpuType, Partition, Policy
from guidance.seed import CLUSTERS

DEFAULTS = {"workload": Workload.TRAINING, "dataset_gb": 1.0, "hours": 2.0}

# The dev cluster's site-alliance nodes (docker/devcluster: two a100 nodes of 2 GPUs, 4 CPUs and
# 8000M each, Slurm account "portal"), published as the federation publishes its clusters.
ALLIANCE_LAB = dataclasses.replace(
    seed.CEDAR.facts,
    slug="alliance-lab",
    name="Alliance lab",
    gpu_types=(GpuType("a100", 40),),
    partitions=(Partition("a100", "a100", 2, 4, 8000, 1, slurm_partition="site-alliance"),),
    policy=Policy(cpus_per_gpu=2, memory_per_gpu_mb=2000),
)
DEV_ACCOUNT = "portal"


def cluster(slug: str):
    if slug == ALLIANCE_LAB.slug:
        return ALLIANCE_LAB
    return next(c.facts for c in CLUSTERS if c.facts.slug == slug)


def advise(slug: str, **fields) -> Recommendation:
    return recommend(JobSpec(**(DEFAULTS | fields)), cluster(slug))


def codes(notes) -> set[str]:
    return {n.code for n in notes}


def note(notes, code: str):
    return next(n for n in notes if n.code == code)
