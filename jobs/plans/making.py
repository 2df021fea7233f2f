"""A plan from a script: checked by the script checker as a pasted script is, its GPU-hours and
Slurm's start estimate beside it. The script may come from the composer (the caller composes
it) or from the program's own hand; both are checked the same way."""

from guidance.engine.gpu_hours import GpuHours
from guidance.engine.script_check import check_script
from guidance.engine.script_check.findings import Severity
from guidance.engine.script_check.parse import parse_script
from guidance.facts import cluster_facts
from guidance.models import Cluster
from jobs.cluster import remote
from jobs.compose.estimates import Ask, estimates
from jobs.compose.forms import NAME_RULE
from jobs.compose.from_script import carry, runs_per_job, sweep_jobs
from jobs.compose.script_spec import NAME
from jobs.compose.submit import with_output_files
from jobs.models import ClusterAccount, Plan, Via, no_login
from jobs.plans import actions


class PlanRefused(Exception):
    """Why no plan was made or decided: the field at fault, a stable code, and words."""

    def __init__(self, field: str | None, code: str, message: str) -> None:
        super().__init__(message)
        self.field, self.code, self.message = field, code, message


def plan_script(
    user,
    cluster: Cluster,
    name: str,
    script: str,
    *,
    via: Via = Via.API,
    token=None,
    client: str = "",
    program: dict[str, str] | None = None,
    budget: float | None = None,
    ask: Ask = remote.test_only,
) -> Plan:
    """The plan of `script` on the user's login on `cluster`; PlanRefused for what could never
    be submitted (no login there, a name sbatch refuses, no #! line)."""
    if not NAME.fullmatch(name):
        raise PlanRefused("name", "invalid_name", NAME_RULE)
    account = ClusterAccount.objects.login_of(user, cluster)
    if account is None:
        raise PlanRefused("cluster", "no_login", no_login(cluster, "first, in the portal"))
    text = script.replace("\r\n", "\n")
    if not parse_script(text).shebang:
        raise PlanRefused(
            "script",
            "not_a_batch_script",
            "The first line must start with #! and the shell to run, e.g. #!/bin/bash: "
            "sbatch refuses the script otherwise.",
        )
    facts = cluster_facts(cluster)
    check = check_script(text, facts, program=program)
    hours = _gpu_hours(text, facts)
    text = with_output_files(text, name)
    [estimate] = estimates([(account, text)], budget, ask)
    plan = Plan.objects.create(
        owner=user,
        account=account,
        via=via,
        token=token,
        client=client[:100],
        name=name,
        script=text,
        findings=[
            {
                "code": note.code,
                "severity": str(note.severity),
                "message": note.message,
                "fix": note.fix,
                "source": (
                    {"document": note.source.document, "section": note.source.section}
                    if note.source
                    else None
                ),
            }
            for note in check.notes
        ],
        blocked=any(note.severity == Severity.FAILS for note in check.notes),
        gpu_hours=hours.total if hours else None,
        gpu_hours_words=hours.words if hours else "",
        start=estimate.start,
        start_note=estimate.problem[:300],
    )
    actions.of_plan(plan, f"Planned {name} on {cluster.name}")
    return plan


def _gpu_hours(text: str, facts) -> GpuHours | None:
    """The GPU-hours the script asks for, read as the composer reads a pasted script: its GPUs
    times its time limit, for each job of its array (a chain's time is already all its parts'),
    and of a portal sweep, for each of its jobs and each part of its runs' chains."""
    values = carry(text, facts).values
    gpus, hours = values.get("gpu_count"), values.get("hours")
    if not gpus or not hours:
        return None
    if sweep := sweep_jobs(text):
        runs, jobs, parts = sweep
        # The composer's hours are each run's: a grouped job's limit holds runs_per_job of them.
        per_job = float(hours) * runs_per_job(text)
        return GpuHours(gpus=int(gpus), hours=per_job, parts=parts, jobs=jobs, runs=runs)
    return GpuHours(gpus=int(gpus), hours=float(hours), jobs=int(values.get("similar_runs") or 1))
