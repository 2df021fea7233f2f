"""Submitting without the composer's page (the API's way): a composition or a whole script sent
by a client, with its own key. Both go the page's way from there (jobs.compose.sending: one job
per key, the submission task queued on commit); a whole script is first checked as the page
checks a hand edit."""

from dataclasses import dataclass

from django.db import transaction

from guidance.engine.script_check import check_script
from guidance.engine.script_check.parse import parse_script
from guidance.engine.types import Note
from guidance.facts import cluster_facts
from guidance.models import Cluster
from jobs.compose import sending
from jobs.compose.forms import NAME_RULE, ComposeForm
from jobs.compose.from_form import Composed
from jobs.compose.script_spec import NAME
from jobs.models import ClusterAccount, Composition, Job, no_login


class NotSubmitted(Exception):
    """Why nothing was submitted: the request field at fault, a stable code, and words."""

    def __init__(self, field: str | None, code: str, message: str) -> None:
        super().__init__(message)
        self.field, self.code, self.message = field, code, message


class Findings(Exception):
    """The script checker's findings on a whole script, which its sender has not accepted."""

    def __init__(self, notes: tuple[Note, ...]) -> None:
        super().__init__(notes)
        self.notes = notes


@dataclass(frozen=True)
class Submission:
    job: Job
    created: bool  # False: the key had made this job already, and nothing new was queued


def storable(form: ComposeForm) -> dict:
    """The form's values as the user typed them, to fill the form again later."""
    return {name: form.data.get(name) for name in form.fields if name in form.data}


def composed(owner, form: ComposeForm, result: Composed, key: str) -> Submission:
    """Saves the composition, as "Save and submit" does, and queues its script."""
    account = _login(owner, form.cleaned_data["cluster"])
    with transaction.atomic():  # a retry that loses the race to another leaves nothing
        if made := sending.made_with(owner, key):
            return Submission(made, created=False)  # and no second composition either
        composition = Composition.objects.create(
            owner=owner,
            name=form.cleaned_data["job_name"],
            fields=storable(form),
            script=result.script,
        )
        job, created = sending.submit(
            owner, account, composition.name, result.script, key, composition
        )
        return Submission(job, created)


def whole_script(
    owner, cluster: Cluster, name: str, text: str, key: str, accept_findings: bool
) -> Submission:
    """Queues a script written outside the composer, with no composition."""
    if not NAME.fullmatch(name):
        raise NotSubmitted("name", "invalid_name", NAME_RULE)
    account = _login(owner, cluster)
    text = text.replace("\r\n", "\n")  # as the page saves a textarea's text
    if not parse_script(text).shebang:
        # sbatch refuses such a script whatever the sender accepts: say so before it queues.
        raise NotSubmitted(
            "script",
            "not_a_batch_script",
            "The first line must start with #! and the shell to run, e.g. #!/bin/bash: "
            "sbatch refuses the script otherwise.",
        )
    if not accept_findings and (notes := check_script(text, cluster_facts(cluster)).notes):
        raise Findings(notes)
    job, created = sending.submit(owner, account, name, with_output_files(text, name), key)
    return Submission(job, created)


def with_output_files(text: str, name: str) -> str:
    """The script, writing its stdout and stderr where the portal reads them (the job's folder,
    as the composer's scripts do) unless it names its own files: the lines go under the #! line,
    where sbatch reads directives."""
    script = parse_script(text)
    array = script.option("array") is not None
    part = "%A_%a" if array else "%j"
    folder = Job(name=name).job_dir
    added = [
        f"#SBATCH --{option}={folder}/slurm-{part}.{suffix}"
        for option, suffix in (("output", "out"), ("error", "err"))
        if script.option(option) is None
    ]
    if not added:
        return text
    first, _, rest = text.partition("\n")
    return "\n".join([first, "# Where the GPU portal reads the job's output:", *added, rest])


def _login(owner, cluster: Cluster) -> ClusterAccount:
    account = ClusterAccount.objects.login_of(owner, cluster)
    if account is None:
        raise NotSubmitted("cluster", "no_login", no_login(cluster, "first, in the portal"))
    return account
