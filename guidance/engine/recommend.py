"""The engine's front door: a job description and a cluster in, a recommendation out."""

from guidance.engine.advice import advise
from guidance.engine.launch import plan_launch
from guidance.engine.notes import Notes
from guidance.engine.overrides import apply_overrides
from guidance.engine.placement import choose_partition, gpus_per_node
from guidance.engine.resources import base_memory_mb, plan_chain, size_resources
from guidance.engine.storage import plan_storage
from guidance.engine.types import Cluster, JobSpec, Recommendation, Scheduler
from guidance.engine.validation import validate


def recommend(spec: JobSpec, cluster: Cluster) -> Recommendation:
    notes = Notes()
    validate(spec, cluster, notes)
    guidance_only = cluster.scheduler != Scheduler.SLURM
    if notes.errors:
        return _result(spec, cluster, notes, guidance_only=guidance_only)

    choice = choose_partition(spec, cluster, notes)
    if choice is None:
        return _result(spec, cluster, notes, guidance_only=guidance_only)

    partition = choice.partition
    storage = plan_storage(
        spec,
        cluster,
        partition=partition,
        base_memory_mb=base_memory_mb(cluster, partition, gpus_per_node(spec)),
        notes=notes,
    )
    chain = plan_chain(spec, cluster, partition, notes)
    launch = plan_launch(spec, notes)
    resources = size_resources(spec, cluster, partition, storage, chain, launch)
    resources = apply_overrides(spec, cluster, partition, resources, chain, notes)
    if notes.errors:
        return _result(spec, cluster, notes, guidance_only=guidance_only, choice=choice)
    advise(spec, cluster, resources, notes, chain)
    return _result(
        spec,
        cluster,
        notes,
        guidance_only=guidance_only,
        storage=storage,
        choice=choice,
        resources=resources,
        chain=chain,
        launch=launch,
    )


def _result(spec: JobSpec, cluster: Cluster, notes: Notes, **parts) -> Recommendation:
    return Recommendation(
        cluster,
        spec,
        errors=tuple(notes.errors),
        warnings=tuple(notes.warnings),
        tips=tuple(notes.tips),
        **parts,
    )
