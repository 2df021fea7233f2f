"""The engine's front door: a job description and a cluster in, a recommendation out."""

import math
from dataclasses import replace

from guidance.engine.advice import advise
from guidance.engine.launch import plan_launch
from guidance.engine.notes import Notes
from guidance.engine.overrides import apply_overrides
from guidance.engine.placement import choose_partition, gpus_per_node
from guidance.engine.resources import base_memory_mb, plan_chain, size_resources
from guidance.engine.storage import plan_storage
from guidance.engine.sweep import Grouping
from guidance.engine.sweep import plan as plan_sweep
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
    sweep = _sweep(spec, cluster, partition, notes)
    if sweep and sweep.grouping == Grouping.GROUPED:
        # Each grouped job runs its share of the runs one after another: that is its length.
        spec = replace(spec, hours=sweep.minutes_per_job / 60)
    storage = plan_storage(
        spec,
        cluster,
        partition=partition,
        base_memory_mb=base_memory_mb(cluster, partition, gpus_per_node(spec)),
        notes=notes,
    )
    chain = plan_chain(spec, cluster, partition, notes)
    if chain and sweep:
        notes.tip(
            "sweep_of_chains",
            f"Each run takes {spec.hours:g} h: a chain of up to {chain.jobs} jobs of "
            f"{chain.hours_per_job:g} h. When Slurm warns a run that its time is nearly up, the "
            "program saves and stops, and the script puts that run alone back in the queue "
            "(scontrol requeue), where it resumes from its own checkpoint.",
            chain.source,
            "hours",
        )
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
        sweep=sweep,
    )


def _sweep(spec: JobSpec, cluster: Cluster, partition, notes: Notes):
    """How the sweep's runs go into jobs: an array task each, or groups run in turn."""
    if spec.sweep is None:
        return None
    minutes = max(1, math.ceil(spec.hours * 60))
    longest = min(partition.max_hours, cluster.policy.checkpoint_chunk_hours) * 60
    if spec.overrides.minutes:  # a time limit set by hand is each job's
        longest = min(longest, spec.overrides.minutes)
    plan = plan_sweep(
        spec.sweep,
        minutes,
        spec.gpu_count,
        at_once=spec.runs_at_once,
        max_minutes=max(minutes, int(longest)),
        one_node=spec.nodes == 1,
    )
    notes.tip("sweep_plan", plan.reason, plan.source, "sweep_grid")
    return plan


def _result(spec: JobSpec, cluster: Cluster, notes: Notes, **parts) -> Recommendation:
    return Recommendation(
        cluster,
        spec,
        errors=tuple(notes.errors),
        warnings=tuple(notes.warnings),
        tips=tuple(notes.tips),
        **parts,
    )
