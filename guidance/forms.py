"""The short "what is your job like" form, turned into the engine's JobSpec."""

from django import forms

from guidance import models, published
from guidance.engine import JobSpec, TierKind, Workload
from guidance.engine.validation import PERSISTENT_KINDS
from guidance.nul import refuse_nul


class SlugChoiceField(forms.ModelChoiceField):
    """A model chosen by its slug. The slug is looked up before any validator runs, and
    PostgreSQL fails a lookup holding a NUL: it is refused first, beside the field."""

    def __init__(self, queryset, **kwargs):
        super().__init__(queryset, to_field_name="slug", **kwargs)

    def to_python(self, value):
        refuse_nul(value)
        return super().to_python(value)


class ClusterChoiceField(SlugChoiceField):
    """A cluster chosen by its slug, with all its facts, from the guidance each process keeps
    (guidance.published) rather than four queries; the list to choose from is the queryset's."""

    def __init__(self, **kwargs):
        queryset = models.Cluster.objects.order_by("name")
        super().__init__(queryset, empty_label=None, **kwargs)
        self.loaded: models.Cluster | None = None  # the form's, once it has read it

    def to_python(self, value) -> models.Cluster | None:
        refuse_nul(value)
        if value in self.empty_values:
            return None
        if isinstance(value, models.Cluster):
            value = value.slug
        if self.loaded is not None and self.loaded.slug == str(value):
            return self.loaded
        cluster = published.cluster_with_facts(str(value))
        if cluster is None:
            raise forms.ValidationError(
                self.error_messages["invalid_choice"],
                code="invalid_choice",
                params={"value": value},
            )
        return cluster


RECOMMEND = "Recommend for me"


class NameChoiceField(forms.ChoiceField):
    """A choice of names as Slurm knows them, found whatever their case (A100 is a100), as the
    engine and the API find them."""

    def to_python(self, value) -> str:
        value = super().to_python(value).strip()
        folded = value.casefold()
        return next((str(k) for k, _ in self.choices if str(k).casefold() == folded), value)


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
    gpu_type = NameChoiceField(label="GPU type", required=False)
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

    def __init__(self, *args, cluster: models.Cluster | None = None, **kwargs):
        # Labels read as questions and checkbox sentences: no colons after them.
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.error_sources: dict[str, object] = {}  # an engine error's message -> its Source
        self.offer_choices(cluster or self._chosen_cluster())

    def _chosen_cluster(self) -> models.Cluster | None:
        """The cluster the form names, for the lists of its GPU types and node types."""
        if "cluster" not in self.fields:
            return None
        slug = self.data.get("cluster") if self.is_bound else self.initial.get("cluster")
        if not slug:
            slug = self.fields["cluster"].queryset.values_list("slug", flat=True).first()
        cluster = published.cluster_with_facts(str(slug)) if slug else None
        self.fields["cluster"].loaded = cluster
        return cluster

    def offer_choices(self, cluster: models.Cluster | None) -> None:
        types = cluster.gpu_types.all() if cluster else ()
        self.offer(
            "gpu_type",
            cluster,
            "GPU type",
            [
                (g.name, f"{g.name} ({g.memory_gb:g} GB{f', {g.model}' if g.model else ''})")
                for g in types
            ],
        )

    def offer(
        self, name: str, cluster: models.Cluster | None, what: str, items: list[tuple[str, str]]
    ) -> None:
        """A list of the cluster's own names after "Recommend for me". With no cluster known,
        the value sent is taken as it is and the cluster's own error speaks."""
        field = self.fields[name]
        if cluster is None:
            sent = (self.data.get(name) or "") if self.is_bound else ""
            field.choices = [("", RECOMMEND), *([(sent, sent)] if sent else [])]
            return
        field.choices = [("", RECOMMEND), *items]
        field.error_messages["invalid_choice"] = (
            f"{cluster.name} has no {what} “%(value)s”: choose one of "
            f"{', '.join(value for value, _ in items)}, or {RECOMMEND.lower()}."
        )

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
            if note.source:  # the page names it beside the message
                self.error_sources[note.message] = note.source
