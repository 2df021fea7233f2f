"""POST /api/v1/check: the script checker of the "Check my script" page, for scripts and editors.
The same findings in the same order, the #SBATCH options sbatch reads, and the fixed script."""

from typing import Any

from django.http import HttpRequest
from ninja import Field, Router, Schema
from pydantic import ConfigDict, field_validator
from pydantic_core import PydanticCustomError

from guidance import models
from guidance.engine.code_check import MAX_FILE_BYTES, MAX_FILES
from guidance.engine.script_check import MAX_CHARS, Basis, Severity, check_script
from guidance.facts import cluster_facts
from jobs.compose import program_files
from jobs.compose.script_spec import NAME
from portal.api_auth import COMPOSE
from portal.api_job_schemas import refuse_empty_script, refuse_nul
from portal.api_planning import InvalidInput, invalid
from portal.api_schemas import CHECKED, FieldError

router = Router(tags=["check"])


class CheckIn(Schema):
    model_config = ConfigDict(extra="forbid")

    cluster: str = Field(max_length=50, description="Slug, as GET /api/v1/clusters lists it.")
    # As POST /jobs takes it; the page checks the first MAX_CHARS of a longer one.
    script: str = Field(max_length=MAX_CHARS, description="The sbatch script, from #!/bin/bash on.")
    account: str = Field(
        "",
        max_length=64,
        description="Your Slurm account on the cluster, written into the fixed script where it "
        "needs one; empty: a placeholder for you to replace.",
    )

    files: dict[str, str] = Field(
        default_factory=dict,
        description="The program the script starts, its source by file name, as POST "
        '/api/v1/check-code takes it (e.g. {"train.py": "import torch..."}, with the YAML '
        f"configs a Hydra program reads; at most {MAX_FILES} files of "
        f"{MAX_FILE_BYTES // 1000} kB each). What hangs on the program "
        "(does it use all the GPUs it is given?) is then read from it; without it, such a "
        "finding is a question (basis 'question').",
    )

    _no_nul = field_validator("cluster", "script", "account", mode="before")(refuse_nul)
    _not_empty = field_validator("script")(refuse_empty_script)

    @field_validator("account")
    @classmethod
    def _a_name(cls, value: str) -> str:
        # It goes into an #SBATCH line of the fixed script: one word, nothing else.
        if value and not NAME.fullmatch(value):
            raise PydanticCustomError(
                "invalid_account", "Use letters, digits, '.', '_', '+' or '-' (no spaces)."
            )
        return value


class SourceOut(Schema):
    document: str = Field(description="A guidance document's file name, or a manual's name.")
    section: str


class FindingOut(Schema):
    code: str = Field(description="Stable, for machines: e.g. 'no_account', 'missing_time'.")
    severity: Severity = Field(
        description="fails: sbatch refuses the script or the job cannot do its work; wastes: it "
        "runs but holds what it does not use; advice: the guidance asks for it."
    )
    severity_label: str = Field(description="The severity in the page's words.")
    message: str = Field(description="What is wrong, and why.")
    fix: str = Field(description="What to do; empty when the message says it.")
    lines: list[int] = Field(description="The script's lines it is about, from 1; may be none.")
    source: SourceOut | None
    basis: Basis = Field(
        description="What it is read from: script; program (the files given); question (it "
        "hangs on the program, which was not given: give `files` to settle it)."
    )


class DirectiveOut(Schema):
    line: int
    option: str = Field(description="The long name, e.g. 'time' for -t.")
    value: str | None = Field(description="As written; null for a flag.")


class CheckOut(Schema):
    cluster: str
    findings: list[FindingOut] = Field(description="Worst first, then in the script's order.")
    directives: list[DirectiveOut] = Field(description="The #SBATCH options sbatch reads.")
    truncated: bool = Field(
        description="Only part of the script was checked; as the page says it of a longer one."
    )
    fixed_script: str | None = Field(
        description="The script with the findings' mechanical fixes applied; null: none apply."
    )
    diff: str = Field(description="From the script to the fixed script, as a unified diff.")


def refused_files(found: list[program_files.Problem]) -> InvalidInput:
    """The program's files refused, each under its own name: both checks take them so."""
    return InvalidInput(
        [
            FieldError(
                field="files" if p.file is None else f"files.{p.file}",
                code=p.code,
                message=p.message,
            )
            for p in found
        ]
    )


@router.post(
    "",
    response={200: CheckOut} | CHECKED,
    url_name="check",
    auth=COMPOSE,
    operation_id="check_script",
    summary="Check an sbatch script against a cluster's guidance, as the Check my script page",
)
def check(request: HttpRequest, body: CheckIn) -> dict[str, Any]:
    cluster = models.Cluster.objects.with_facts().filter(slug=body.cluster).first()
    if cluster is None:
        known = ", ".join(models.Cluster.objects.values_list("slug", flat=True))
        raise invalid(
            "cluster", "unknown_cluster", f"No cluster '{body.cluster}'. Known clusters: {known}."
        )
    files = program_files.without_bom(body.files)
    if files and (found := program_files.problems(files)):
        raise refused_files(found)
    result = check_script(body.script, cluster_facts(cluster), body.account, files or None)
    return {
        "cluster": cluster.slug,
        "findings": [
            {
                "code": f.code,
                "severity": f.severity,
                "severity_label": f.severity.label,
                "message": f.message,
                "fix": f.fix,
                "lines": list(f.lines),
                "source": f.source,
                "basis": f.basis,
            }
            for f in result.notes
        ],
        "directives": result.directives,
        "truncated": result.truncated,
        "fixed_script": result.fixed,
        "diff": result.diff,
    }
