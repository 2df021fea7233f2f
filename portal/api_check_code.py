"""POST /api/v1/check-code: the training-code checker of the "Check" page, for scripts and
editors. The program's files go in by name; the findings come back in the page's order (changes
by expected impact on GPU utilization, then questions, then advice PyTorch already follows), each
at its file, line and column. Files it cannot read are a 422 naming the file (and the line of a
syntax error): the program is never run or imported, only parsed."""

from typing import Any

from django.http import HttpRequest
from ninja import Field, Router, Schema
from pydantic import ConfigDict, field_validator

from guidance import models
from guidance.engine.code_check import MAX_FILE_BYTES, MAX_FILES, Impact, Kind, check_code
from guidance.facts import cluster_facts
from jobs.compose import program_files
from portal.api_auth import COMPOSE
from portal.api_check import SourceOut, refused_files
from portal.api_job_schemas import refuse_nul
from portal.api_planning import InvalidInput
from portal.api_schemas import CHECKED, FieldError

router = Router(tags=["check"])


class CheckCodeIn(Schema):
    model_config = ConfigDict(extra="forbid")

    cluster: str = Field(max_length=50, description="Slug, as GET /api/v1/clusters lists it.")
    files: dict[str, str] = Field(
        description=f'The program\'s source by file name, e.g. {{"train.py": "import torch..."}}: '
        f"the entry point and the modules it imports from the project, as relative paths ending "
        f".py, and the YAML configs it reads (.yaml, .yml: a Hydra program's configs/ folder, "
        f"by their paths, e.g. configs/trainer/gpu.yaml); at most {MAX_FILES} files of "
        f"{MAX_FILE_BYTES // 1000} kB each."
    )
    entry: str | None = Field(
        None,
        max_length=program_files.MAX_NAME_CHARS,
        description="The file that is run (python train.py); null: the first of `files`.",
    )

    _no_nul = field_validator("cluster", "entry", mode="before")(refuse_nul)


class CodeFindingOut(Schema):
    file: str
    line: int = Field(description="From 1.")
    column: int = Field(description="From 1, as editors count.")
    end_line: int = Field(description="The last line of the code it is about (>= line).")
    rule: str = Field(description="Stable, for machines: e.g. 'dataloader_num_workers'.")
    kind: Kind = Field(
        description="change: what to change; question: the code does not say the value (an "
        "argument, a config file), so make sure of it; default: advice that current PyTorch "
        "already follows."
    )
    severity: Impact = Field(description="The expected impact on GPU utilization.")
    title: str = Field(description="The rule's title.")
    message: str = Field(description="What the program does, what the guidance says, and why.")
    fix: str = Field(description="What to do, in words; may be empty.")
    before: str = Field(description="The program's own lines as they are.")
    after: str = Field(description="The same lines changed; empty where no mechanical change.")
    source: SourceOut | None


class CheckCodeOut(Schema):
    cluster: str
    findings: list[CodeFindingOut] = Field(
        description="Changes by expected impact (high first), then questions, then defaults; "
        "within each, the entry point first, then the other files by name, then by line. "
        "Empty, with trains_or_evaluates true: nothing to change."
    )
    files: list[str] = Field(description="The files read, the entry point first.")
    trains_or_evaluates: bool = Field(
        description="Whether any file read trains or evaluates a model. False: every line was "
        "checked, but the program-wide rules (mixed precision, TF32, torch.compile) need the "
        "training loop: send the file with it and the modules it imports."
    )


@router.post(
    "",
    response={200: CheckCodeOut} | CHECKED,
    url_name="check_code",
    auth=COMPOSE,
    operation_id="check_code",
    summary="Check a PyTorch training program against a cluster's guidance, line by line",
)
def check(request: HttpRequest, body: CheckCodeIn) -> dict[str, Any]:
    cluster = models.Cluster.objects.with_facts().filter(slug=body.cluster).first()
    if cluster is None:
        known = ", ".join(models.Cluster.objects.values_list("slug", flat=True))
        message = f"No cluster '{body.cluster}'. Known clusters: {known}."
        raise InvalidInput([FieldError(field="cluster", code="unknown_cluster", message=message)])
    files = program_files.without_bom(body.files)
    if found := program_files.problems(files):
        raise refused_files(found)
    if problem := program_files.entry_problem(body.entry or "", files):
        raise InvalidInput([FieldError(field="entry", code=problem.code, message=problem.message)])
    result = check_code(files, cluster_facts(cluster), body.entry or None)
    if found := program_files.unreadable(result):
        raise refused_files(found)
    return {
        "cluster": cluster.slug,
        "findings": [
            {
                "file": f.file,
                "line": f.line,
                "column": f.column,
                "end_line": f.end_line,
                "rule": f.rule,
                "kind": f.kind,
                "severity": f.impact,
                "title": f.title,
                "message": f.message,
                "fix": f.fix,
                "before": f.before,
                "after": f.after,
                "source": f.source,
            }
            for f in result.findings
        ],
        "files": list(result.files),
        "trains_or_evaluates": result.trains_or_evaluates,
    }
