"""How the API plans a job and writes its script: the engine plans once, then the composer's
form validates the rest and writes the script from that plan (POST /script, POST /jobs/compose).
Whatever cannot be planned is InvalidInput, answered 422 naming each field at fault."""

from guidance import engine, models
from guidance.engine.sweep import SweepError
from guidance.engine.types import Recommendation
from guidance.facts import cluster_facts
from jobs.compose import past_runs
from jobs.compose.forms import ComposeForm
from jobs.compose.from_form import Composed, compose
from portal.api_schemas import FieldError, JobIn, ScriptIn


class InvalidInput(Exception):
    """Input that passed the schema but cannot be planned; answered like a schema error."""

    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__(errors)
        self.errors = errors


def invalid(field: str | None, code: str, message: str) -> InvalidInput:
    return InvalidInput([FieldError(field=field, code=code, message=message)])


def plan_job(job: JobIn) -> Recommendation:
    """The engine's advice for the job; InvalidInput naming each field at fault if it has none."""
    cluster = models.Cluster.objects.with_facts().filter(slug=job.cluster).first()
    if cluster is None:
        known = ", ".join(models.Cluster.objects.values_list("slug", flat=True))
        raise invalid(
            "cluster", "unknown_cluster", f"No cluster '{job.cluster}'. Known clusters: {known}."
        )
    try:
        spec = job.job_spec()
    except SweepError as error:  # the runs as given (ScriptIn): named by the field at fault
        raise invalid(error.field, "invalid_sweep", str(error)) from None
    rec = engine.recommend(spec, cluster_facts(cluster))
    if rec.errors:
        raise InvalidInput(
            [FieldError(field=e.field, code=e.code, message=e.message) for e in rec.errors]
        )
    return rec


def composed_script(job: ScriptIn, form: ComposeForm, user) -> Composed:
    """The script the composer writes for these fields, with its plan and the user's earlier runs
    of it (as the composer's page shows them); InvalidInput if none."""
    rec = plan_job(job)  # unknown cluster and the engine's objections, named by field
    # Values set by hand are read by the form (time and memory as Slurm writes them), which
    # plans the job again with them.
    composed = compose(form, None if job.sets_by_hand else rec)
    if composed is None:
        raise InvalidInput(
            [
                FieldError(
                    field=None if name == "__all__" else name,
                    code=e.code or "invalid",
                    message=" ".join(e.messages),
                )
                for name, errors in form.errors.as_data().items()
                for e in errors
            ]
        )
    if not composed.script:
        raise invalid(
            "cluster",
            "guidance_only",
            f"{composed.recommendation.cluster.name} is not scheduled by Slurm: "
            "the portal gives advice for it but writes no script.",
        )
    return past_runs.attach(composed, user, form.cleaned_data)
