"""From a filled-in composer form to the recommendation, the script and its salloc twin."""

from dataclasses import dataclass, replace

from guidance import engine
from guidance.engine import Placement, Recommendation
from guidance.engine.history import History
from guidance.engine.slurm_time import format_time, parse_seconds
from guidance.engine.sweep import Grouping
from guidance.engine.sweep import Plan as SweepPlan
from guidance.facts import cluster_facts
from jobs.compose.forms import BUILD_ON_NODE, ComposeForm
from jobs.compose.script import render, resource_options
from jobs.compose.script_spec import ScriptError, ScriptSpec, Stage

INTERACTIVE_MINUTES = 60  # 002: try the program for an hour in salloc before batch runs


@dataclass(frozen=True)
class Composed:
    recommendation: Recommendation
    spec: ScriptSpec | None = None
    script: str = ""
    history: History | None = None  # the user's earlier runs of it (past_runs.attach)

    @property
    def salloc(self) -> str:
        return salloc_line(self.spec) if self.spec else ""


def compose(form: ComposeForm, rec: Recommendation | None = None) -> Composed | None:
    """Fills `form` with every problem it finds; returns None when the form is not valid.
    `rec`: the engine's advice for the form's job, for a caller that asked for it already."""
    if not form.is_valid():
        return None
    if rec is None:
        rec = engine.recommend(form.job_spec(), cluster_facts(form.cleaned_data["cluster"]))
    form.add_engine_errors(rec.errors)
    if not rec.ok:
        return None
    if rec.guidance_only:
        return Composed(rec)
    spec = script_spec(form.cleaned_data, rec)
    try:
        return Composed(rec, spec, render(spec))
    except ScriptError as error:
        form.add_error(error.field if error.field in form.fields else None, str(error))
        return None


def with_reasons(composed: Composed, reasons: tuple[str, ...], what: str) -> Composed:
    """The script again, with more reasons in its header (`what`: their heading)."""
    if not reasons or composed.spec is None:
        return composed
    more = tuple(f"{what}: {' '.join(reason.split())}" for reason in reasons)
    spec = replace(composed.spec, reasons=composed.spec.reasons + more)
    return replace(composed, spec=spec, script=render(spec))


def advice_so_far(form: ComposeForm) -> Recommendation | None:
    """The advice while the form is not complete: the engine's, once the questions it needs are
    answered, so that it shows while the user is still writing the command."""
    if not form.advice_is_valid():
        return None
    rec = engine.recommend(form.job_spec(), cluster_facts(form.cleaned_data["cluster"]))
    return rec if rec.ok else None


def script_spec(data: dict, rec: Recommendation) -> ScriptSpec:
    storage, choice, resources = rec.storage, rec.choice, rec.resources
    chain = rec.chain
    sweep = rec.sweep if rec.spec.sweep else None
    grouped = sweep is not None and sweep.grouping == Grouping.GROUPED
    if sweep is not None:  # a run's chain is its own array task, requeued for each part
        array = _sweep_array(sweep, rec.spec.runs_at_once)
    else:
        array = chain.array if chain else ""
    work_tier = storage.work_tier
    environment = rec.cluster.environment
    return ScriptSpec(
        cluster=rec.cluster.name,
        job_name=data["job_name"],
        account=data.get("account", ""),
        partition=choice.partition.slurm_partition,
        gpu_type=choice.gpu_type.name,
        gpus_per_node=resources.gpus_per_node.value,
        nodes=resources.nodes.value,
        tasks_per_node=resources.tasks_per_node.value,
        launch=rec.launch.launch,
        cpus_per_task=resources.cpus_per_task.value,
        mem=resources.mem,
        time=resources.time,
        array=array,
        chain=chain is not None,
        checkpointing=rec.spec.checkpointing,
        mail_user=data.get("mail_user", ""),
        modules=tuple(data.get("modules", ())),
        venv=data["environment_path"] if data.get("environment") == "venv" else "",
        requirements=data["environment_path"] if data.get("environment") == BUILD_ON_NODE else "",
        placement=storage.placement if storage.staged else Placement.SHARED,
        stage_root=work_tier.path if work_tier else "",
        stage_per_job=work_tier.per_job if work_tier else True,
        data_source=data.get("data_path", ""),
        data_kind=storage.data_kind,
        site_variables=environment.variables,
        python_module=environment.python_module if environment.modules else "",
        python_builder=environment.python_builder,
        results_dest=data["results_dir"],
        checkpoint_root=storage.checkpoints.root if storage.checkpoints else "",
        command=data["command"],
        sweep=rec.spec.sweep if sweep else None,
        grouped_runs=sweep.runs_per_job if grouped else 0,
        chain_parts=chain.jobs if chain and sweep else 0,
        staging=tuple(_stage(s) for s in storage.staging),
        copy_back=_stage(storage.copy_back) if storage.copy_back else None,
        cleanup=_stage(storage.cleanup) if storage.cleanup else None,
        reasons=tuple(
            f"{what}: {' '.join(reason.split())}"
            for what, reason in [
                ("Data", storage.reason),
                ("GPU", choice.reason),
                *([("Chain", _chain_reason(rec))] if chain else []),
                *([("Sweep", sweep.reason)] if sweep else []),
                *_checkpoints(storage, data["job_name"], rec.spec.checkpointing, sweep is not None),
            ]
        ),
    )


def _chain_reason(rec: Recommendation) -> str:
    """A sweep's runs are chained by requeueing their own tasks, not by an array of parts."""
    if rec.sweep:
        return next(n.message for n in rec.tips if n.code == "sweep_of_chains")
    return rec.chain.reason


def _sweep_array(plan: SweepPlan | None, at_once: int) -> str:
    """An array task per run (also a sweep of one), or per group of runs; none for one group."""
    if plan is None or (plan.grouping == Grouping.GROUPED and plan.jobs == 1):
        return ""
    return f"1-{plan.jobs}" + (f"%{at_once}" if at_once else "")


def _checkpoints(
    storage: engine.types.StoragePlan, job_name: str, checkpointing: bool, sweep: bool
) -> list:
    """Where a checkpointing job keeps its checkpoints, and why, for the script's header."""
    plan = storage.checkpoints
    if plan is None or not checkpointing:
        return []
    folder = f"{plan.folder(job_name)}{'/<run folder>, one per run' if sweep else ''}"
    return [("Checkpoints", f"in {folder}. {plan.reason}")]


def _stage(step: engine.types.Step) -> Stage:
    return Stage(f"{step.action}. {' '.join(step.reason.split())}", step.command)


def salloc_line(spec: ScriptSpec) -> str:
    """The interactive allocation with the batch job's resources, for an hour at most (002)."""
    seconds = min(parse_seconds(spec.time), INTERACTIVE_MINUTES * 60)
    return " ".join(["salloc", *resource_options(spec, format_time(seconds))])
