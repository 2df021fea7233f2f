"""The edge between the database and the engine: published guidance as engine dataclasses."""

from guidance import engine, models
from guidance.engine.sources import Source


def _source(obj: models.Sourced) -> Source | None:
    if not obj.source_document:
        return None
    return Source(obj.source_document, obj.source_section)


def cluster_facts(cluster: models.Cluster) -> engine.Cluster:
    gpu_types = {g.pk: g for g in cluster.gpu_types.all()}
    policy = getattr(cluster, "policy", None)
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
            )
            for p in cluster.partitions.all()
            if p.gpu_type_id in gpu_types
        ),
        storage_tiers=tuple(
            engine.StorageTier(
                name=t.name,
                kind=engine.TierKind(t.kind),
                path=t.path,
                quota_bytes=t.quota_bytes,
                quota_files=t.quota_files,
                purge_policy=t.purge_policy,
                persistent=t.persistent,
                per_job=t.per_job,
                source=_source(t),
            )
            for t in cluster.storage_tiers.all()
        ),
        policy=_policy(policy) if policy else engine.Policy(),
    )


def _policy(policy: models.Policy) -> engine.Policy:
    return engine.Policy(
        in_memory_limit_gb=policy.in_memory_limit_gb,
        node_local_limit_gb=policy.node_local_limit_gb,
        checkpoint_chunk_hours=policy.checkpoint_chunk_hours,
        cpus_per_gpu=policy.cpus_per_gpu,
        memory_per_gpu_mb=policy.memory_per_gpu_mb,
        utilization_target_percent=policy.utilization_target_percent,
        many_files_threshold=policy.many_files_threshold,
        small_file_kb=policy.small_file_kb,
        source=_source(policy),
    )
