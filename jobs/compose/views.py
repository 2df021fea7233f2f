"""The composer's pages: compose with live advice and preview, download, or save and submit
(queued for jobs/tasks.py); saved compositions; "check this path" and "check with Slurm" on the
cluster, while the user waits. "Check my script" is check_views.py's."""

import math
import re
from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from guidance.engine import Recommendation, data_path
from guidance.engine.history import History, Outcome
from guidance.engine.sweep import PLACEHOLDER
from guidance.engine.sweep import Plan as SweepPlan
from guidance.models import Cluster
from guidance.nul import MESSAGE, checks_nul_per_field, holds_nul
from jobs.cluster import remote
from jobs.cluster.errors import ClusterError
from jobs.compose import edit_check, past_runs, path_check, sending
from jobs.compose.forms import SLURM_ONLY, ComposeForm, ScriptEditForm
from jobs.compose.from_form import Composed, advice_so_far
from jobs.compose.from_form import compose as compose_script
from jobs.compose.slurm_check import Validation, validate
from jobs.compose.submit import storable
from jobs.models import ClusterAccount, Composition, SiteTemplate, no_login

SCRIPT_TYPE = "text/x-shellscript; charset=utf-8"


def _get_composition_for_user(request: HttpRequest, pk: int) -> Composition:
    # Someone else's composition does not exist, as far as this user can tell.
    return get_object_or_404(Composition, pk=pk, owner=request.user)


def _starting_values(request: HttpRequest) -> tuple[dict, str]:
    """What a new composition starts from (a site template, one of the user's, or nothing), and
    what the user must hear about it: a cluster they chose that the template does not keep."""
    if slug := request.GET.get("template"):
        if holds_nul(slug):  # no template's slug has one, and PostgreSQL fails the lookup
            raise Http404("No such template.")
        template = get_object_or_404(SiteTemplate, slug=slug, published=True)
        chosen = request.GET.get("on", "")
        values = template.starting_values(chosen)
        if chosen and values.get("cluster") != chosen:
            note = (
                f"“{template.name}” is written for {values.get('cluster')}, not {chosen}: the "
                "cluster changed with it. Choose yours again to see the advice there."
            )
            return values, note
        return values, ""
    return {}, ""


def _reopened(request: HttpRequest) -> Composition | None:
    """A saved composition opened in the composer (?from=): its values, advice and script."""
    if pk := request.GET.get("from"):
        return _get_composition_for_user(request, int(pk) if pk.isdigit() else 0)
    return None


def _reached(data: QueryDict) -> set[str]:
    """The fields the user has been to (compose.js keeps the list): a live update speaks of
    those, not of every field still empty below them."""
    return set(data.get("reached", "").split(","))


def _errors_shown(form: ComposeForm, reached: set[str] | None, *, fields: bool) -> list[tuple]:
    """(field, label, message, source) of each error to list, all of them unless `reached` says
    which, and those of fields only with `fields`; the source is the engine's, for a limit it
    names."""
    if not form.is_bound:
        return []
    sources = form.error_sources
    shown = [("", "", e, sources.get(e)) for e in form.non_field_errors()]
    for field in form if fields else ():
        if reached is None or field.name in reached:
            shown += [(field.name, field.label, e, sources.get(e)) for e in field.errors]
    return shown


def _field_errors(form: ComposeForm, reached: set[str] | None = None) -> dict[str, list]:
    """Each field's (message, source) errors, as shown beside it: those of fields the user has
    reached, or of every field."""
    if not form.is_bound:
        return {}
    sources = form.error_sources
    return {
        field.name: [(e, sources.get(e)) for e in field.errors]
        if reached is None or field.name in reached
        else []
        for field in form
    }


def _has_errors_in_sight(form: ComposeForm, reached: set[str] | None) -> bool:
    return bool(form.non_field_errors()) or any(_field_errors(form, reached).values())


def _live_fields(
    form: ComposeForm,
    reached: set[str] | None,
    note: str | None = None,
    rec: Recommendation | None = None,
) -> dict:
    """What a live update changes beside the advice: the errors by each field, the note above
    the advice, the sweep's summary, and the scheduler whose questions the form asks."""
    if note is None:
        problems = " ".join(form.non_field_errors())
        note = (
            "The advice and script below are for the values before your last change: correct "
            f"the value marked beside its field and they follow. {problems}"
        ).strip()
    cluster = form.fields["cluster"].loaded
    return {
        "form": form,
        "live_field_errors": list(_field_errors(form, reached).items()),
        "advice_note": note,
        "scheduler": cluster.scheduler if cluster is not None else "",
        "sweep_summary": _sweep_summary(form, rec),
    }


@dataclass(frozen=True)
class SweepSummary:
    runs: int
    plan: SweepPlan | None  # the engine's, once the advice stands
    unnamed: tuple[str, ...]  # parameters the command names neither as {name} nor as $name


def _sweep_summary(form: ComposeForm, rec: Recommendation | None) -> SweepSummary | None:
    """The sweep beside its fields, as the user types it: its runs at once, and with the advice
    the GPU-hours and how the runs go into jobs (the command need not name them yet)."""
    if not form.is_bound:
        return None
    form.is_valid()  # the page has read the form already: this only makes sure
    made = form.cleaned_data.get("sweep")
    if made is None:
        return None
    command = form.cleaned_data.get("command", "")
    named = {found.group(1) for found in PLACEHOLDER.finditer(command) if found.group(1)}
    unnamed = tuple(
        name
        for name in made.names
        if command and name not in named and not re.search(rf"\$\{{?{name}\b", command)
    )
    return SweepSummary(len(made.runs), rec.sweep if rec is not None else None, unnamed)


def _is_form_data(data: QueryDict) -> bool:
    return "cluster" in data


def _edited(text: str, generated: str) -> bool:
    return text.replace("\r\n", "\n").strip() != generated.strip()


def _download(name: str, text: str) -> HttpResponse:
    response = HttpResponse(text.replace("\r\n", "\n"), content_type=SCRIPT_TYPE)
    response["Content-Disposition"] = f'attachment; filename="{name}.sbatch"'
    return response


@checks_nul_per_field
@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def compose(request: HttpRequest) -> HttpResponse:
    data = request.POST if request.method == "POST" else request.GET
    reopened = None if _is_form_data(data) else _reopened(request)
    start_note = ""
    if _is_form_data(data):
        form = ComposeForm(data)
    elif reopened is not None:  # bound: its advice and script show at once
        form = ComposeForm(reopened.fields)
    else:
        starting, start_note = _starting_values(request)
        form = ComposeForm(initial=starting)
    composed = _composed(request, form, reopened)
    script_text = data.get("script_text", "") if request.method == "POST" else ""
    if "apply_history" in data and form.is_bound:
        form, composed, script_text = _apply_history(request, form, composed, script_text)
    if reopened is not None and reopened.edited:
        script_text = reopened.script  # the hand edits come back with it
    checked = None
    # Without JavaScript, "Check this path" posts the whole form here; htmx asks check_path.
    checked_path = _path_check(request) if "check_path" in request.POST else None

    edit = ScriptEditForm(data if request.method == "POST" else None)
    edit_findings = ()
    if request.method == "POST" and composed and composed.script and not edit.is_valid():
        if request.htmx and "validate" in data:  # the answer goes below the editor
            refused = Validation(False, plain=_edit_errors(edit))
            return render(request, "jobs/validation.html", {"validation": refused})
    elif request.method == "POST" and composed and composed.script:
        text = script_text or composed.script
        if "download" in data:
            return _download(form.cleaned_data["job_name"], text)
        if {"save", "submit"} & set(data):
            if _edited(text, composed.script) and data.get("keep_edit") != edit_check.kept(text):
                cluster = form.cleaned_data["cluster"]
                edit_findings = edit_check.new_findings(text, composed.script, cluster)
            if not edit_findings:  # shown first; sent again, the edit is kept as it is
                return _save(request, form, edit, composed, text)
        if "validate" in data:
            checked = validate(request.user, form.cleaned_data["cluster"], text)
            if request.htmx:
                return render(request, "jobs/validation.html", {"validation": checked})

    if reopened is not None and reopened.edited and composed and composed.script:
        # Saved with hand edits: checked again as it opens, as a save would check them.
        edit_findings = edit_check.new_findings(
            script_text, composed.script, form.cleaned_data["cluster"]
        )

    rec = composed.recommendation if composed else None
    live = bool(request.htmx) and "live" in data
    if rec is None and live:
        rec = advice_so_far(form)
    reached = _reached(data) if live else None
    if live and rec is None and _has_errors_in_sight(form, reached):
        # A value the advice cannot use: its error shows beside its field, and the advice and
        # script for the values before stay, rather than being wiped until it is corrected.
        response = render(request, "jobs/compose_live_fields.html", _live_fields(form, reached))
        response["HX-Reswap"] = "none"
        return response
    warnings = rec.warnings if rec else ()
    ctx = {
        "history": _history(request, form, composed, rec, reopened),
        "form": form,
        # Live, each field's errors show beside it; the page without JavaScript also lists them.
        "errors_shown": _errors_shown(form, reached, fields=not live),
        "field_errors": _field_errors(form),
        "start_note": start_note,
        "slurm_only": SLURM_ONLY,
        # Every field the page was shown with counts as reached: its errors stay in sight.
        "reached": ",".join(form.fields) if form.is_bound and not live else data.get("reached", ""),
        # Warnings about one field also show beside it (and update there through htmx).
        "field_warnings": {name: [w for w in warnings if w.field == name] for name in form.fields},
        "composed": composed,
        "rec": rec,
        "script_text": script_text,
        "edit": edit,
        # The name typed under "Save as" stays; a new page offers the job's name.
        "save_as": data.get("composition_name") if "composition_name" in data else None,
        "validation": checked,
        "edit_findings": edit_findings,
        "keep_edit": edit_check.kept(script_text) if edit_findings else "",
        "path_check": checked_path,
        "edited": bool(script_text and composed and _edited(script_text, composed.script)),
        "site_templates": SiteTemplate.objects.filter(published=True).prefetch_related("clusters"),
        "my_templates": Composition.objects.filter(owner=request.user, is_template=True),
        "submission_key": sending.new_key(),
    } | _live_fields(form, reached, note="", rec=rec)
    template = "jobs/compose.html#panel" if request.htmx else "jobs/compose.html"
    return render(request, template, ctx, status=200)


def _composed(
    request: HttpRequest, form: ComposeForm, reopened: Composition | None
) -> Composed | None:
    """The form's script, with the user's earlier runs of it (and the reasons of the values
    taken from them in the script's header)."""
    composed = compose_script(form) if form.is_bound else None
    if composed is None:
        return None
    return past_runs.attach(composed, request.user, form.cleaned_data, reopened)


def _history(
    request: HttpRequest,
    form: ComposeForm,
    composed: Composed | None,
    rec: Recommendation | None,
    reopened: Composition | None = None,
) -> History | None:
    """The earlier runs beside the advice, also while the rest of the form is being filled in."""
    if composed is not None:
        return composed.history
    if rec is None or not form.is_bound:
        return None
    return past_runs.history(request.user, form.cleaned_data, rec, reopened)


def _apply_history(
    request: HttpRequest, form: ComposeForm, composed: Composed | None, script_text: str
) -> tuple[ComposeForm, Composed | None, str]:
    """The form again with the values the earlier runs propose set by hand."""
    found = _history(request, form, composed, None if composed else advice_so_far(form))
    if found is None or not found.proposal:
        messages.info(request, "The earlier runs propose nothing to apply: the form is as it was.")
        return form, composed, script_text
    if composed and script_text and not _edited(script_text, composed.script):
        script_text = ""  # the preview follows the new values, unless it was edited by hand
    data = form.data.copy()
    for suggestion in found.proposal:
        data[suggestion.field] = suggestion.value
    changes = ", ".join(s.change for s in found.proposal)
    # The runs say how long the work takes: a duration declared longer than the time they
    # propose would only be warned about against it.
    longest = max(run.elapsed_seconds or 0 for run in found.kept) / 3600
    finished = all(run.outcome == Outcome.COMPLETED for run in found.kept)
    declared = form.cleaned_data.get("hours") if form.is_valid() else None
    proposes_time = "time_limit" in {s.field for s in found.proposal}
    if proposes_time and finished and declared and declared > longest > 0:
        data["hours"] = f"{math.ceil(longest * 100) / 100:g}"
        changes += f", duration {data['hours']} h (the longest run) instead of {declared:g} h"
    applied = ComposeForm(data)
    messages.success(request, f"Set from {len(found.kept)} earlier runs: {changes}.")
    return applied, _composed(request, applied, None), script_text


def _edit_errors(edit: ScriptEditForm) -> str:
    return " ".join(
        f"{edit[name].label}: {e}" for name, errors in edit.errors.items() for e in errors
    )


def _save(
    request: HttpRequest, form: ComposeForm, edit: ScriptEditForm, composed, text: str
) -> HttpResponse:
    """Keeps the composition; "Save and submit" then queues it for the cluster."""
    data = form.data
    if "submit" in data and (sent := sending.already_sent(request)):
        return sent  # not a second composition either
    with transaction.atomic():  # a click that loses the race to another leaves nothing
        return _save_composition(request, form, edit, composed, text)


def _save_composition(
    request: HttpRequest, form: ComposeForm, edit: ScriptEditForm, composed, text: str
) -> HttpResponse:
    data = form.data
    name = edit.cleaned_data["composition_name"][:100]
    composition = Composition.objects.create(
        owner=request.user,
        name=name or form.cleaned_data["job_name"],
        fields=storable(form),
        script=text.replace("\r\n", "\n"),
        edited=_edited(text, composed.script),
    )
    if "submit" in data:
        return start_submission(request, composition, form.cleaned_data["cluster"])
    messages.success(request, f"Saved “{composition.name}”.")
    return redirect(composition)


def start_submission(request: HttpRequest, composition: Composition, cluster) -> HttpResponse:
    """Queues the composition's script for submission; the job's page follows it from there."""
    account = ClusterAccount.objects.login_of(request.user, cluster)
    if account is None:
        to = f"first; your composition “{composition.name}” is saved"
        messages.error(request, no_login(cluster, to))
        return redirect("jobs:accounts")
    return sending.send(request, composition, account)


@login_required
@require_safe
def compositions(request: HttpRequest) -> HttpResponse:
    mine = Composition.objects.filter(owner=request.user)
    return render(request, "jobs/compositions.html", {"compositions": mine})


@login_required
@require_safe
def composition(request: HttpRequest, pk: int) -> HttpResponse:
    obj = _get_composition_for_user(request, pk)
    if "download" in request.GET:
        return _download(obj.fields.get("job_name") or "job", obj.script)
    return render(request, "jobs/composition.html", _composition_context(obj))


def _composition_context(obj: Composition, **more) -> dict:
    """The saved script, and the advice its values get from the cluster's guidance today."""
    form = ComposeForm(obj.fields)
    composed = compose_script(form)
    return {
        "composition": obj,
        "rec": composed.recommendation if composed else None,
        "advice_errors": [e for errors in form.errors.values() for e in errors],
        "differs": bool(composed and composed.script and _edited(obj.script, composed.script)),
        "submission_key": sending.new_key(),
        **more,
    }


@login_required
@require_POST
def composition_update(request: HttpRequest, pk: int) -> HttpResponse:
    obj = _get_composition_for_user(request, pk)
    if "submit" in request.POST:
        cluster = Cluster.objects.filter(slug=obj.fields.get("cluster", "")).first()
        if cluster is None:
            messages.error(request, "This composition names no cluster the portal knows.")
            return redirect(obj)
        return start_submission(request, obj, cluster)
    if "validate" in request.POST:
        cluster = Cluster.objects.filter(slug=obj.fields.get("cluster", "")).first()
        if cluster is None:
            messages.error(request, "This composition names no cluster the portal knows.")
            return redirect(obj)
        checked = validate(request.user, cluster, obj.script)
        return render(
            request, "jobs/composition.html", _composition_context(obj, validation=checked)
        )
    if "delete" in request.POST:
        obj.delete()
        messages.success(request, f"Deleted “{obj.name}”.")
        return redirect("jobs:compositions")
    obj.is_template = request.POST.get("is_template") == "on"
    obj.save(update_fields=["is_template", "updated"])
    return redirect(obj)


@checks_nul_per_field
@login_required
@require_POST
def check_path(request: HttpRequest) -> HttpResponse:
    """The composer's "Check this path on the cluster", through htmx."""
    return render(request, "jobs/path_check.html", _path_check(request))


def _path_check(request: HttpRequest) -> dict:
    """Looks at the data path on the cluster, through the user's own login, when asked."""
    slug, path = request.POST.get("cluster", ""), request.POST.get("data_path", "").strip()
    if holds_nul(slug, path):  # the form says which field beside it
        return {"problem": f"The data path or the cluster holds a NUL character: {MESSAGE}"}
    cluster = Cluster.objects.select_related("job_environment").filter(slug=slug).first()
    if cluster is None or not path:
        return {"problem": "Choose a cluster and enter a data path first."}
    account = ClusterAccount.objects.login_of(request.user, cluster)
    if account is None:
        return {"problem": no_login(cluster, "to check paths there"), "needs_login": True}
    try:
        found = remote.check_path(account, path, path_check.fallbacks(cluster, account.username))
    except ClusterError as error:
        return {"problem": error.message}
    ok, said = data_path.describe(found, cluster.name, request.POST.get("data_kind", ""))
    return {"ok": ok, "said": said}
