"""The edge between the database and the engine: published guidance as engine dataclasses."""

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import fields

from guidance import engine, models
from guidance.engine.sources import PORTAL_DEFAULTS, Source
from guidance.engine.types import CodeRule


def same_named(obj, dataclass: type, *, but: tuple[str, ...] = ("source",)) -> dict:
    """The values of obj (a model or a dataclass) for the fields the two sides share by name."""
    return {f.name: getattr(obj, f.name) for f in fields(dataclass) if f.name not in but}


POLICY_SOURCES = ("source", "cpus_source", "memory_source", "max_hours_source", "checkpoint_source")


def _source(obj: models.Sourced, prefix: str = "") -> Source | None:
    document = getattr(obj, f"{prefix}source_document")
    if not document:
        return None
    return Source(document, getattr(obj, f"{prefix}source_section"))


# Within `facts_kept()`: each cluster's facts read once. A page that plans one job for several
# clusters (where should this run) reads each cluster's rows once instead of at every step.
_kept: ContextVar[dict[int, engine.Cluster] | None] = ContextVar("kept_facts", default=None)


@contextmanager
def facts_kept() -> Iterator[None]:
    """Keeps each cluster's facts for the block: for one request, where they cannot change."""
    token = _kept.set({})
    try:
        yield
    finally:
        _kept.reset(token)


def cluster_facts(cluster: models.Cluster) -> engine.Cluster:
    kept = _kept.get()
    if kept is None:
        return _read_facts(cluster)
    if cluster.pk not in kept:
        kept[cluster.pk] = _read_facts(cluster)
    return kept[cluster.pk]


def _read_facts(cluster: models.Cluster) -> engine.Cluster:
    gpu_types = {g.pk: g for g in cluster.gpu_types.all()}
    policy = getattr(cluster, "policy", None)
    environment = getattr(cluster, "job_environment", None)
    return engine.Cluster(
        slug=cluster.slug,
        name=cluster.name,
        scheduler=engine.Scheduler(cluster.scheduler),
        gpu_types=tuple(
            engine.GpuType(
                g.name, g.memory_gb, g.relative_speed, g.expects_full_utilization, _source(g)
            )
            for g in gpu_types.values()
        ),
        partitions=tuple(
            engine.Partition(
                name=p.name,
                gpu_type=gpu_types[p.gpu_type_id].name,
                gpus_per_node=p.gpus_per_node,
                cpus_per_node=p.cpus_per_node,
                memory_per_node_mb=p.memory_per_node_mb,
                max_hours=p.max_hours,
                default_hours=p.default_hours,
                purposes=frozenset({engine.Workload(p.purpose)}) if p.purpose else frozenset(),
                slurm_partition=p.slurm_partition,
                source=_source(p),
                purpose_source=_source(p, "purpose_"),
                hours_source=_source(p, "hours_"),
                node_local_gb=p.node_local_gb,
            )
            for p in cluster.partitions.all()
            if p.gpu_type_id in gpu_types
        ),
        storage_tiers=tuple(
            engine.StorageTier(
                **same_named(t, engine.StorageTier, but=("source", "kind")),
                kind=engine.TierKind(t.kind),
                source=_source(t),
            )
            for t in cluster.storage_tiers.all()
        ),
        policy=(
            engine.Policy(
                **same_named(policy, engine.Policy, but=POLICY_SOURCES),
                source=_source(policy),
                cpus_source=_source(policy, "cpus_"),
                memory_source=_source(policy, "memory_"),
                max_hours_source=_source(policy, "max_hours_"),
                checkpoint_source=_source(policy, "checkpoint_"),
            )
            if policy
            else engine.Policy(cpus_source=PORTAL_DEFAULTS, memory_source=PORTAL_DEFAULTS)
        ),
        environment=(
            engine.JobEnvironment(
                variables=environment.pairs(),
                modules=environment.modules,
                python_module=environment.python_module,
                python_builder=engine.PythonBuilder(environment.python_builder),
                source=_source(environment),
            )
            if environment
            else engine.JobEnvironment()
        ),
        rules=tuple(
            engine.SiteRule(engine.Rule(r.rule), _source(r)) for r in cluster.site_rules.all()
        ),
        code_rules=tuple(
            CodeRule(r.rule, r.enabled, r.wording, _source(r)) for r in cluster.code_rules.all()
        ),
    )
