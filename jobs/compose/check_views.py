""" "Check my script": the findings on a pasted script and the lines they are about, the fixed
script to download or to check again, and a link that opens the script in the composer. Beside
it, the training program: pasted or uploaded, its findings against its numbered lines."""

import json
import posixpath
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from guidance.engine import Scheduler
from guidance.engine.code_check.entry import program_entry
from guidance.engine.script_check import ACCOUNT_PLACEHOLDER
from guidance.nul import checks_nul_per_field
from jobs.compose import from_script, program_files
from jobs.compose.check_form import ScriptCheckForm
from jobs.compose.check_result import diff_lines, listing
from jobs.compose.code_check_form import PREFIX, CodeCheckForm
from jobs.compose.code_check_result import program_result
from jobs.compose.views import SCRIPT_TYPE

FIXED_NAME = "job-fixed.sh"


@checks_nul_per_field
@login_required
@require_http_methods(["GET", "POST"])
def check(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        form = ScriptCheckForm(initial={"cluster": request.GET.get("cluster")})
        return render(request, "jobs/check.html", {"form": form} | _code_form(request))
    form = ScriptCheckForm(request.POST, request.FILES)
    return render(
        request, "jobs/check.html", _checked(form, _program(request)) | _code_form(request)
    )


def _program(request: HttpRequest) -> dict[str, str] | None:
    """The training program's files, where its boxes beside the script hold one that reads: the
    script check then reads from it what hangs on the program. Its own errors wait for its own
    button."""
    form = CodeCheckForm(with_script_cluster(request), request.FILES)
    return form.cleaned_data["files"] if form.is_valid() else None


def with_script_cluster(request: HttpRequest) -> QueryDict:
    """What the page sent, the program's cluster the script's where it chose none ("The
    script's cluster", or a form that sent only the script)."""
    sent = request.POST.copy()
    sent[f"{PREFIX}-cluster"] = sent.get(f"{PREFIX}-cluster") or sent.get("cluster", "")
    return sent


@checks_nul_per_field
@login_required
@require_POST
def check_code(request: HttpRequest) -> HttpResponse:
    """The training program's check, on the same page, the script's box as it was sent."""
    form = CodeCheckForm(with_script_cluster(request), request.FILES)
    script = {"cluster": request.POST.get("cluster"), "script": request.POST.get("script", "")}
    context = {"form": ScriptCheckForm(initial=script), "code_form": form}
    if form.is_valid() and (checked := form.checked) is not None:
        context["program"] = program_result(form.cleaned_data["files"], checked)
    return render(request, "jobs/check.html", context)


def _code_form(request: HttpRequest) -> dict:
    """The training program's form, unchecked: as it was sent beside the script (the files
    chosen for upload excepted, which no page can choose again), else for the page's cluster."""
    if request.method == "GET":
        return {"code_form": CodeCheckForm()}  # on the script's cluster, whichever it is
    sent = {name: request.POST.get(f"{PREFIX}-{name}") for name in CodeCheckForm.TYPED}
    initial = {name: value for name, value in sent.items() if value is not None}
    return {"code_form": CodeCheckForm(initial=initial)}


@checks_nul_per_field
@login_required
@require_POST
def check_fixed(request: HttpRequest) -> HttpResponse:
    """The fixed script as a file. The page sends the script it checked, which is checked again:
    the file is the diff the page showed, applied."""
    form = ScriptCheckForm(request.POST)
    if not form.is_valid():
        return render(request, "jobs/check.html", _checked(form) | _code_form(request))
    # Nothing left to fix: the script as sent. So it is when the only fix was the line breaks,
    # which no form field keeps (browsers send CRLF, the form reads LF).
    fixed = form.check(_program_sent(request)).fixed
    text = form.cleaned_data["text"] if fixed is None else fixed
    response = HttpResponse(text, content_type=SCRIPT_TYPE)
    response["Content-Disposition"] = f'attachment; filename="{FIXED_NAME}"'
    return response


def _program_sent(request: HttpRequest) -> dict[str, str] | None:
    """The program the page checked the script with, sent back with the download (uploads
    cannot be chosen again): the download is the fix the page showed. Anything else: none."""
    try:
        files = json.loads(request.POST.get("program_files", ""))
    except ValueError:
        return None
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in files.items()
    ):
        return None
    return files if files and not program_files.problems(files) else None


def _other_program(text: str, program: dict[str, str] | None) -> str:
    """The program the script runs, where none of the files given is it (`python train.py`
    beside a pasted t.py): they are read as its program all the same, and the page says so."""
    entry = program_entry(text)
    if not program or entry is None:
        return ""
    wanted = posixpath.basename(entry.name)
    if any(posixpath.basename(name) == wanted for name in program):
        return ""
    return entry.name


def _checked(form: ScriptCheckForm, program: dict[str, str] | None = None) -> dict:
    """The page's context: the form, and once it is valid, what the check found."""
    if not form.is_valid():
        return {"form": form}
    text = form.cleaned_data["text"]
    result = form.check(program)
    context = {
        "form": form,
        "result": result,
        "checked_text": text,
        "program_read": program,
        "program_other": _other_program(text, program),
        "program_json": json.dumps(program) if program else "",
    }
    if form.facts.scheduler != Scheduler.SLURM:
        return context  # no script runs there: nothing to list, fix or compose
    carried = from_script.carry(text, form.facts)
    query = urlencode(from_script.composer_query(carried))
    return context | {
        "listing": listing(text, result.notes),
        "diff": diff_lines(result.diff),
        "placeholder": ACCOUNT_PLACEHOLDER,
        "composer_url": f"{reverse('jobs:compose')}?{query}",
        "left_out": carried.left_out,
    }
