"""The composer's form: the advice form's questions plus what the script itself needs."""

from django import forms
from django.core.validators import RegexValidator

from guidance.forms import AdviceForm
from guidance.models import Cluster
from jobs import script

NAME_RULE = (
    "Use letters, digits, '.', '_', '+' or '-' (no spaces), starting with a letter or digit."
)
ENVIRONMENTS = [
    ("none", "Nothing: modules only"),
    ("venv", "Activate an existing virtualenv"),
    ("requirements", "Build a virtualenv on the node from a requirements file"),
]


def _name_field(label: str, **kw) -> forms.CharField:
    return forms.CharField(
        label=label,
        max_length=64,
        # RegexValidator searches: anchor the pattern so that the whole value must match.
        validators=[RegexValidator(rf"\A{script.NAME.pattern}\Z", NAME_RULE)],
        **kw,
    )


class ComposeForm(AdviceForm):
    cluster = forms.ModelChoiceField(
        queryset=Cluster.objects.order_by("name"), to_field_name="slug", empty_label=None
    )
    job_name = _name_field("Job name", initial="train")
    account = _name_field(
        "Account", required=False, help_text="The allocation to bill, e.g. def-someuser."
    )
    data_path = forms.CharField(
        label="Data path",
        required=False,
        max_length=1000,
        help_text="The dataset on shared storage: a folder, or a .tar archive of many files.",
    )
    results_dir = forms.CharField(
        label="Results directory",
        max_length=1000,
        initial="$HOME/results",
        help_text="Persistent storage for results and checkpoints.",
    )
    modules = forms.CharField(
        label="Modules to load",
        required=False,
        max_length=500,
        help_text="Separated by spaces, e.g. python/3.11 cuda cudnn.",
    )
    environment = forms.ChoiceField(label="Python environment", choices=ENVIRONMENTS)
    environment_path = forms.CharField(
        label="Virtualenv or requirements file",
        required=False,
        max_length=1000,
        help_text="A path on the cluster.",
    )
    command = forms.CharField(
        label="Command",
        max_length=10_000,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        help_text="Runs with $STAGE_DIR (the data), $RESULTS_DIR, $CHECKPOINT_DIR and, in a "
        "chain, $LAST_CHECKPOINT set.",
    )
    mail_user = forms.EmailField(
        label="E-mail me when it ends or fails", required=False, max_length=254
    )

    field_order = [
        "cluster", "job_name", "account", "workload", "dataset_gb", "file_count",
        "data_location", "data_path", "gpu_type", "gpu_count", "gpu_mem_gb", "hours",
        "checkpointing", "multi_gpu", "nodes", "expects_full_utilization", "similar_runs",
        "modules", "environment", "environment_path", "command", "results_dir", "mail_user",
    ]  # fmt: skip

    def clean_modules(self) -> tuple[str, ...]:
        modules = tuple(self.cleaned_data["modules"].split())
        bad = [m for m in modules if not script.MODULE.fullmatch(m)]
        if bad:
            raise forms.ValidationError(
                f"Not a module name: {', '.join(bad)}. Module names use letters, digits and ._+/-."
            )
        return modules

    def clean(self) -> dict:
        data = super().clean()
        if data.get("environment", "none") != "none" and not data.get("environment_path"):
            self.add_error("environment_path", "Enter the path of the virtualenv or the file.")
        return data
