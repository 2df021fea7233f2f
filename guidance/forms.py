"""The short "what is your job like" form, turned into the engine's JobSpec."""

from django import forms

from guidance import models, published
from guidance.engine import JobSpec, TierKind, Workload
from guidance.engine.validation import PERSISTENT_KINDS


class ClusterChoiceField(forms.ModelChoiceField):
    """A cluster chosen by its slug, with all its facts, from the guidance each process keeps
    (guidance.published) rather than four queries; the list to choose from is the queryset's."""

    def __init__(self, **kwargs):
        queryset = models.Cluster.objects.order_by("name")
        super().__init__(queryset, to_field_name="slug", empty_label=None, **kwargs)

    def to_python(self, value) -> models.Cluster | None:
        if value in self.empty_values:
            return None
        if isinstance(value, models.Cluster):
            value = value.slug
        cluster = published.cluster_with_facts(str(value))
        if cluster is None:
            raise forms.ValidationError(
                self.error_messages["invalid_choice"],
                code="invalid_choice",
                params={"value": value},
            )
        return cluster


def _number(label: str, example: str, **kw) -> dict:
    return {
        "label": label,
        "error_messages": {"invalid": f"Enter a number, e.g. {example}."},
        **kw,
    }


class AdviceForm(forms.Form):
    workload = forms.ChoiceField(choices=[(w.value, w.value.capitalize()) for w in Workload])
    dataset_gb = forms.FloatField(**_number("Dataset size (GB)", "50"))
    file_count = forms.IntegerField(
        **_number("Number of files", "120000", required=False, help_text="Leave empty if unsure.")
    )
    data_location = forms.ChoiceField(
        label="Where the data lives now",
        required=False,
        choices=[("", "Not sure"), *((k.value, k.label) for k in PERSISTENT_KINDS)],
    )
    gpu_type = forms.CharField(
        label="GPU type",
        required=False,
        help_text="Leave empty for a recommendation.",
        widget=forms.TextInput(attrs={"list": "gpu-types"}),
    )
    gpu_count = forms.IntegerField(**_number("GPUs", "1", initial=1))
    gpu_mem_gb = forms.FloatField(
        **_number("GPU memory needed (GB)", "20", required=False, help_text="Per GPU, if known.")
    )
    hours = forms.FloatField(**_number("Duration (hours)", "12"))
    checkpointing = forms.BooleanField(
        label="The program resumes from its latest checkpoint", required=False
    )
    multi_gpu = forms.BooleanField(label="The program uses several GPUs (DDP)", required=False)
    nodes = forms.IntegerField(**_number("Nodes", "1", initial=1))
    expects_full_utilization = forms.BooleanField(
        label="I expect it to keep the GPU near 100% busy", required=False
    )
    similar_runs = forms.IntegerField(**_number("Similar runs", "1", initial=1))

    def __init__(self, *args, **kwargs):
        # Labels read as questions and checkbox sentences: no colons after them.
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)

    def job_spec(self) -> JobSpec:
        data = self.cleaned_data
        return JobSpec(
            workload=Workload(data["workload"]),
            dataset_gb=data["dataset_gb"],
            hours=data["hours"],
            file_count=data["file_count"] or 0,
            data_location=TierKind(data["data_location"]) if data["data_location"] else None,
            gpu_type=data["gpu_type"].strip() or None,
            gpu_count=data["gpu_count"],
            gpu_mem_gb=data["gpu_mem_gb"],
            checkpointing=data["checkpointing"],
            multi_gpu=data["multi_gpu"],
            nodes=data["nodes"],
            expects_full_utilization=data["expects_full_utilization"],
            similar_runs=data["similar_runs"],
        )

    def add_engine_errors(self, errors) -> None:
        """Show the engine's objections beside the fields they are about."""
        for note in errors:
            field = note.field if note.field in self.fields else None
            self.add_error(field, note.message)
