"""The "Check my script" form: a cluster and an sbatch script, pasted or uploaded."""

import math
from functools import cached_property

from django import forms
from django.core.exceptions import ValidationError

from guidance import models
from guidance.engine import Cluster
from guidance.engine.script_check import MAX_CHARS, ScriptCheck, check_script
from guidance.facts import cluster_facts
from guidance.forms import SlugChoiceField

SCRIPT_SUFFIXES = ".sh,.sbatch,.slurm,.job,.bash,.txt,text/plain,text/x-shellscript"


def cluster_field(required: str, empty_label: str | None = None) -> SlugChoiceField:
    """The cluster to check against, as the page's forms choose it (by slug, in links too).
    `empty_label`: a first choice that stands for another form's cluster."""
    return SlugChoiceField(
        queryset=models.Cluster.objects.with_facts(),
        empty_label=empty_label,
        error_messages={
            "required": required,
            "invalid_choice": "There is no cluster “%(value)s”: choose one from the list.",
        },
    )


class ScriptCheckForm(forms.Form):
    cluster = cluster_field("Choose the cluster the script is for.")
    script = forms.CharField(
        label="Job script",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 24, "class": "script", "spellcheck": "false"}),
        help_text="The whole sbatch script, from #!/bin/bash to the last command.",
    )
    script_file = forms.FileField(
        label="Or upload it",
        required=False,
        widget=forms.FileInput(attrs={"accept": SCRIPT_SUFFIXES}),
        help_text=f"A text file of at most {MAX_CHARS // 1000} kB; it replaces the text above.",
        error_messages={"empty": "The uploaded file is empty: choose the job script itself."},
    )

    def __init__(self, *args, **kwargs) -> None:
        # Form.__init__ sets the suffix on the instance, so a class attribute would be ignored.
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)

    def clean_script(self) -> str:
        # Browsers send a textarea's line breaks as CRLF whatever the user pasted; sbatch refuses
        # CRLF, so only an uploaded file should be told about them.
        return self.cleaned_data["script"].replace("\r\n", "\n")

    def clean_script_file(self) -> str | None:
        upload = self.cleaned_data.get("script_file")
        if not upload:
            return None
        if upload.size > MAX_CHARS:
            size_kb = math.ceil(upload.size / 1000)
            raise ValidationError(
                f"{upload.name} is {size_kb:,} kB: upload a job script of at most "
                f"{MAX_CHARS // 1000} kB."
            )
        not_text = (
            f"{upload.name} is not a text file: upload the job script itself (e.g. job.sh), "
            "saved as plain text (UTF-8)."
        )
        try:
            text = upload.read().decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ValidationError(not_text) from None
        if "\x00" in text:
            raise ValidationError(not_text)
        return text

    def clean(self) -> dict:
        data = super().clean()
        if self.has_error("script_file"):
            return data
        text = data.get("script_file") or data.get("script") or ""
        if not text.strip():
            self.add_error(
                "script",
                "Paste a job script into the box or upload one: there is nothing to check.",
            )
        elif data.get("script_file"):
            # Show the uploaded script in the box, where the findings can be read against it.
            self.data = self.data.copy()
            self.data["script"] = text
        data["text"] = text
        return data

    @cached_property
    def facts(self) -> Cluster:
        """The chosen cluster as the engine reads it (once a valid form has chosen one)."""
        return cluster_facts(self.cleaned_data["cluster"])

    def check(self, program: dict[str, str] | None = None) -> ScriptCheck:
        """`program`: the files of the program the script starts, where the page was given it."""
        return check_script(self.cleaned_data["text"], self.facts, program=program)
