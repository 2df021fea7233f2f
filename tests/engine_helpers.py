"""Shared by the engine's table tests: run the engine on a seeded cluster with a few fields set."""

from guidance.engine import JobSpec, Recommendation, Workload, recommend
from guidance.seed import CLUSTERS

DEFAULTS = {"workload": Workload.TRAINING, "dataset_gb": 1.0, "hours": 2.0}


def cluster(slug: str):
    return next(c.facts for c in CLUSTERS if c.facts.slug == slug)


def advise(slug: str, **fields) -> Recommendation:
    return recommend(JobSpec(**(DEFAULTS | fields)), cluster(slug))


def codes(notes) -> set[str]:
    return {n.code for n in notes}


def note(notes, code: str):
    return next(n for n in notes if n.code == code)
