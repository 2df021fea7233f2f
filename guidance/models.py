"""The clusters' published guidance, as admins edit it. Every change is kept in its history."""

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.urls import reverse
from simple_history.models import HistoricalRecords

from guidance.engine import PythonBuilder, Rule, Scheduler, TierKind, Workload
from guidance.engine.code_check.catalogue import RULES as CODE_RULES
from guidance.engine.shell import MODULE_NAME, SAFE_PATH, VARIABLE_NAME
from guidance.engine.sources import Source

POSITIVE = [MinValueValidator(0.001, "Must be more than zero.")]
NOT_NEGATIVE = [MinValueValidator(0, "Cannot be negative.")]
AT_LEAST_ONE = [MinValueValidator(1, "Must be at least 1.")]
RESERVED_CLUSTER_SLUGS = frozenset({"documents"})


def source_fields(fact: str, help_text: str = "") -> tuple[models.CharField, models.CharField]:
    """A document and section citing one fact of an object apart from its main source: one
    section rarely states all of a row's facts (a node type's hardware, purpose and time limit)."""
    document = models.CharField(
        f"{fact}: source document", max_length=200, blank=True, help_text=help_text
    )
    return document, models.CharField(f"{fact}: section", max_length=200, blank=True)


class Sourced(models.Model):
    """Where a piece of guidance came from, for users (the citation) and admins (the note)."""

    source_document = models.CharField(
        max_length=200, blank=True, help_text="Document file name or URL the guidance comes from."
    )
    source_section = models.CharField(max_length=200, blank=True)
    note = models.TextField(
        blank=True, help_text="For admins: where numbers came from, what is still to check."
    )

    class Meta:
        abstract = True

    @property
    def source(self) -> str:
        return ", ".join(filter(None, [self.source_document, self.source_section]))


class ClusterQuerySet(models.QuerySet):
    def with_facts(self) -> "ClusterQuerySet":
        """Everything guidance.facts.cluster_facts reads, in six queries, and the partitions'
        GPU types that the cluster page shows."""
        return self.select_related("policy", "job_environment").prefetch_related(
            models.Prefetch("partitions", Partition.objects.select_related("gpu_type")),
            "gpu_types",
            "storage_tiers",
            "site_rules",
            "code_rules",
        )


class Cluster(Sourced):
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=100)
    scheduler = models.CharField(
        max_length=20, choices=[(s.value, s.label) for s in Scheduler], default=Scheduler.SLURM
    )
    login_host = models.CharField(max_length=255, blank=True)
    login_port = models.PositiveIntegerField(
        default=22, validators=[MinValueValidator(1), MaxValueValidator(65535)]
    )
    # The login host's public key as an admin confirmed it: the portal refuses any other.
    host_key = models.TextField(
        blank=True, help_text="The pinned host key line, e.g. 'ssh-ed25519 AAAA...'."
    )
    host_key_fingerprint = models.CharField(max_length=100, blank=True)
    # Sites that require MFA take automated logins only on automation nodes, whose keys run only
    # the portal's wrapper (docker/cluster-side/portal-remote). The node shows the host key pinned
    # above.
    automation_host = models.CharField(
        max_length=255,
        blank=True,
        help_text="The automation node, for logins that go through the portal's wrapper (e.g. "
        "robot.example.org); empty: the login host.",
    )
    automation_port = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(65535)],
        help_text="Its SSH port; empty: the login port.",
    )
    description = models.TextField(blank=True, help_text="Markdown.")
    history = HistoricalRecords()

    objects = ClusterQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("guidance:cluster", args=[self.slug])

    @property
    def takes_scripts(self) -> bool:
        return self.scheduler == Scheduler.SLURM

    @property
    def accepts_logins(self) -> bool:
        return bool(self.takes_scripts and self.login_host and self.host_key)

    def clean(self) -> None:
        # /guidance/documents/ lists the guidance documents: a cluster of that name had no page.
        if self.slug in RESERVED_CLUSTER_SLUGS:
            raise ValidationError({"slug": f"'{self.slug}' is taken by a page of the portal."})


class GpuType(Sourced):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="gpu_types")
    name = models.CharField(
        max_length=50, help_text="As Slurm knows it, e.g. the type in --gres=gpu:a100:1."
    )
    model = models.CharField(max_length=100, blank=True, help_text="The card, e.g. NVIDIA A100.")
    memory_gb = models.FloatField("memory (GB)", validators=POSITIVE)
    relative_speed = models.FloatField(
        default=1.0, validators=POSITIVE, help_text="For ranking: the fastest card is about 1.0."
    )
    expects_full_utilization = models.BooleanField(
        default=False,
        help_text="The cluster asks users to keep this GPU near 100% busy, or use another.",
    )
    history = HistoricalRecords()

    class Meta:
        ordering = ["cluster", "-memory_gb", "name"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "name"], name="unique_gpu_type_per_cluster")
        ]
        verbose_name = "GPU type"

    def __str__(self) -> str:
        return f"{self.name} ({self.memory_gb:g} GB)"


class Partition(Sourced):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="partitions")
    name = models.CharField(max_length=50, help_text="The node type, as users know it.")
    slurm_partition = models.CharField(
        max_length=50, blank=True, help_text="Leave empty where Slurm routes jobs by GPU type."
    )
    gpu_type = models.ForeignKey(GpuType, on_delete=models.PROTECT, related_name="partitions")
    gpus_per_node = models.PositiveSmallIntegerField("GPUs per node", validators=AT_LEAST_ONE)
    cpus_per_node = models.PositiveSmallIntegerField("CPUs per node", validators=AT_LEAST_ONE)
    memory_per_node_mb = models.PositiveIntegerField(
        "memory per node (MB)", validators=AT_LEAST_ONE
    )
    node_count = models.PositiveIntegerField(null=True, blank=True)
    max_hours = models.FloatField("maximum walltime (hours)", validators=POSITIVE)
    default_hours = models.FloatField("default walltime (hours)", default=1, validators=POSITIVE)
    purpose = models.CharField(
        max_length=20,
        blank=True,
        choices=[(w.value, w.value.capitalize()) for w in Workload],
        help_text="Set the node type aside for one kind of work; empty for any.",
    )
    node_local_gb = models.FloatField(
        "node-local storage (GB)",
        null=True,
        blank=True,
        validators=POSITIVE,
        help_text="The local disk a job on this node type can count on. Datasets up to this "
        "size are staged there even above the policy's node-local limit; empty where unknown.",
    )
    # The source above cites the hardware; the purpose and the time limit are often stated
    # elsewhere (or, for a site that publishes no limit yet, nowhere).
    purpose_source_document, purpose_source_section = source_fields(
        "purpose", "Where the node type's purpose is stated; empty for any work."
    )
    hours_source_document, hours_source_section = source_fields(
        "maximum walltime", "Where the node type's time limit is stated."
    )
    history = HistoricalRecords()

    class Meta:
        ordering = ["cluster", "name"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "name"], name="unique_partition_per_cluster")
        ]
        verbose_name = "partition / node type"

    def __str__(self) -> str:
        return f"{self.cluster.slug}/{self.name}"

    def cited_facts(self) -> list[tuple[str, Source]]:
        """(what, where it is stated) for each fact of the row that names a source."""
        facts = [
            ("hardware", self.source_document, self.source_section),
            ("set aside", self.purpose_source_document, self.purpose_source_section),
            ("max time", self.hours_source_document, self.hours_source_section),
        ]
        return [(what, Source(doc, section)) for what, doc, section in facts if doc or section]

    def clean(self) -> None:
        errors = {}
        if self.gpu_type_id and self.cluster_id and self.gpu_type.cluster_id != self.cluster_id:
            errors["gpu_type"] = "Choose a GPU type of this partition's cluster."
        if self.max_hours and self.default_hours and self.default_hours > self.max_hours:
            errors["default_hours"] = "The default walltime cannot exceed the maximum."
        if errors:
            raise ValidationError(errors)


class StorageTier(Sourced):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="storage_tiers")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=20, choices=[(k.value, k.label) for k in TierKind])
    path = models.CharField(
        max_length=255, blank=True, help_text="A path or variable, e.g. $SLURM_TMPDIR."
    )
    quota_bytes = models.BigIntegerField(null=True, blank=True, validators=NOT_NEGATIVE)
    quota_files = models.BigIntegerField(null=True, blank=True, validators=NOT_NEGATIVE)
    purge_policy = models.TextField(blank=True)
    persistent = models.BooleanField(default=True, help_text="Outlives the job.")
    per_job = models.BooleanField(
        default=False, help_text="Created for each job and removed by the scheduler afterwards."
    )
    history = HistoricalRecords()

    class Meta:
        ordering = ["cluster", "kind", "name"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "name"], name="unique_tier_per_cluster")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.path})" if self.path else self.name


class Policy(Sourced):
    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="policy")
    in_memory_limit_gb = models.FloatField(
        "in-memory limit (GB)", default=10, validators=NOT_NEGATIVE
    )
    node_local_limit_gb = models.FloatField(
        "node-local limit (GB)", default=100, validators=NOT_NEGATIVE
    )
    stages_training_data = models.BooleanField(
        "training data always on node-local storage",
        default=False,
        help_text="The site asks for training data on the node's local storage whatever its "
        "size, up to the node's disk (the processing cluster's document 000): the node-local "
        "limit then applies to other work only.",
    )
    checkpoint_chunk_hours = models.FloatField(
        "checkpoint chunk (hours)", default=24, validators=POSITIVE
    )
    cpus_per_gpu = models.PositiveSmallIntegerField(
        "CPUs per GPU", default=6, validators=AT_LEAST_ONE
    )
    memory_per_gpu_mb = models.PositiveIntegerField(
        "memory per GPU (MB)", default=32000, validators=AT_LEAST_ONE
    )
    utilization_target_percent = models.PositiveSmallIntegerField(
        "GPU utilization target (%)",
        default=90,
        validators=[MinValueValidator(1), MaxValueValidator(100)],
    )
    many_files_threshold = models.PositiveIntegerField(
        default=100_000,
        validators=AT_LEAST_ONE,
        help_text="From this many files on, archive the dataset before moving it.",
    )
    small_file_kb = models.PositiveIntegerField(
        "small file (kB)", default=300, help_text="Files under this size count as small."
    )
    results_dir = models.CharField(
        "results directory",
        max_length=255,
        blank=True,
        validators=[
            RegexValidator(
                rf"\A{SAFE_PATH.pattern}\Z",
                "Letters, digits, '_./-' and variables ($PROJECT) only.",
            )
        ],
        help_text="Where results go unless the user says otherwise, as jobs see it (e.g. "
        "$PROJECT/results): it starts with $HOME or a variable of the job environment. Empty "
        "where the site publishes none: users then enter their own. Checkpoints go there too "
        "unless a checkpoint directory is set.",
    )
    checkpoint_dir = models.CharField(
        "checkpoint directory",
        max_length=255,
        blank=True,
        validators=[
            RegexValidator(
                rf"\A{SAFE_PATH.pattern}\Z",
                "Letters, digits, '_./-' and variables ($SCRATCH) only.",
            )
        ],
        help_text="Where checkpoints go, as jobs see it (e.g. $SCRATCH/checkpoints): each job "
        "keeps them in a folder there named by its job name, the same for every part of a "
        "chain. Empty: with the results, in their checkpoints folder.",
    )
    checkpoint_source_document = models.CharField(
        "checkpoint directory: source document",
        max_length=200,
        blank=True,
        help_text="Where the checkpoint directory (or keeping checkpoints with the results) "
        "comes from.",
    )
    checkpoint_source_section = models.CharField(
        "checkpoint directory: section", max_length=200, blank=True
    )
    # The CPUs and the memory per GPU are cited on their own: one section rarely states both.
    cpus_source_document, cpus_source_section = source_fields(
        "CPUs per GPU", "Where the CPUs per GPU come from; the source above covers the rest."
    )
    memory_source_document, memory_source_section = source_fields(
        "memory per GPU", "Where the memory per GPU comes from."
    )
    # The cluster's maximum job duration: the longest of its node types' limits.
    max_hours_source_document, max_hours_source_section = source_fields(
        "maximum job duration",
        "Where the cluster's longest time limit is stated; the rule that refuses a longer job "
        "cites it.",
    )
    history = HistoricalRecords()

    class Meta:
        verbose_name_plural = "policies"

    def __str__(self) -> str:
        return f"{self.cluster.name} policy"

    def clean(self) -> None:
        if self.in_memory_limit_gb > self.node_local_limit_gb:
            raise ValidationError(
                {"in_memory_limit_gb": "The in-memory limit cannot exceed the node-local limit."}
            )


# What jobs must not have redefined by a cluster's published environment.
RESERVED_VARIABLES = frozenset(
    {
        "BASH_ENV", "ENV", "HOME", "IFS", "LD_LIBRARY_PATH", "LD_PRELOAD", "PATH", "PS4",
        "SHELL", "SHELLOPTS", "USER",
    }
)  # fmt: skip


class JobEnvironment(Sourced):
    """What the site gives every job. Scripts for the cluster rely on exactly this, so a wrong
    entry here makes them stop with a clear message on the cluster."""

    cluster = models.OneToOneField(
        Cluster, on_delete=models.CASCADE, related_name="job_environment"
    )
    variables = models.TextField(
        blank=True,
        help_text="One per line: NAME=value for a variable the site sets in every job (scripts "
        "fall back on the value when the login environment did not pass it, e.g. "
        "SCRATCH=/scratch/$USER), or NAME alone where only the scheduler sets it, per job "
        "(e.g. SLURM_TMPDIR).",
    )
    modules = models.BooleanField(
        "module command in jobs", default=False, help_text="`module load` works in batch jobs."
    )
    python_module = models.CharField(
        max_length=100,
        blank=True,
        help_text="Loaded before building a virtualenv in a job (e.g. python), unless the user "
        "lists a module of that name.",
    )
    python_builder = models.CharField(
        "how jobs build a virtualenv",
        max_length=20,
        choices=[(b.value, b.label) for b in PythonBuilder],
        default=PythonBuilder.VENV,
    )
    history = HistoricalRecords()

    def __str__(self) -> str:
        return f"{self.cluster.name} job environment"

    @classmethod
    def default_for(cls, cluster: Cluster) -> "JobEnvironment | None":
        """What a new cluster's jobs can be counted on to have, from its scheduler: on Slurm,
        $HOME, $USER and Slurm's own variables, no module command, and python3 -m venv. An admin
        then adds what the site gives (e.g. SLURM_TMPDIR, SCRATCH=/scratch/$USER, modules)."""
        if not cluster.takes_scripts or cls.objects.filter(cluster=cluster).exists():
            return None
        environment = cls(
            cluster=cluster,
            python_builder=PythonBuilder.VENV,
            note="The default for a new Slurm cluster: nothing but what Slurm itself gives. "
            "Add the variables and the module command its jobs have.",
        )
        environment._change_reason = "The default for a new Slurm cluster"
        environment.save()
        return environment

    def pairs(self) -> tuple[tuple[str, str], ...]:
        """The variables as (name, value) pairs; value "" where only the scheduler sets it."""
        lines = (line.strip() for line in self.variables.splitlines())
        return tuple(tuple(line.partition("=")[::2]) for line in lines if line)

    def clean(self) -> None:
        for name, value in self.pairs():
            if not VARIABLE_NAME.fullmatch(name):
                raise ValidationError({"variables": f"'{name}' is not a variable name."})
            if name in RESERVED_VARIABLES:
                raise ValidationError(
                    {"variables": f"${name} is the shell's or the login's own: leave it out."}
                )
            if not SAFE_PATH.fullmatch(value):
                raise ValidationError(
                    {
                        "variables": f"{name}'s value may hold letters, digits, '_./-' and "
                        "variables ($USER), nothing else."
                    }
                )
        if self.python_module and not MODULE_NAME.fullmatch(self.python_module):
            raise ValidationError({"python_module": "Not a module name."})
        if self.python_module and not self.modules:
            raise ValidationError(
                {"python_module": "Jobs have no module command: leave this empty."}
            )


class SiteRule(Sourced):
    """A rule about job scripts that the cluster's guidance states: the script checker applies
    it on this cluster, citing this source."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="site_rules")
    rule = models.CharField(max_length=40, choices=[(r.value, r.label) for r in Rule])
    history = HistoricalRecords()

    class Meta:
        ordering = ["cluster", "rule"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "rule"], name="one_rule_per_cluster")
        ]

    def __str__(self) -> str:
        return f"{self.cluster.name}: {Rule(self.rule).label}"


class CodeRuleSetting(Sourced):
    """An admin's setting of one rule of the training-code checker on a cluster: switched off,
    reworded, or citing the site's own source. A rule without a setting applies as the catalogue
    words and cites it."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="code_rules")
    rule = models.CharField(max_length=40, choices=[(r.key, r.title) for r in CODE_RULES.values()])
    enabled = models.BooleanField(
        default=True, help_text="Off: the checker says nothing of this rule on this cluster."
    )
    wording = models.TextField(
        blank=True,
        help_text="Replaces the finding's message on this cluster; empty keeps the rule's own.",
    )
    history = HistoricalRecords()

    class Meta:
        ordering = ["cluster", "rule"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "rule"], name="one_code_rule_per_cluster")
        ]
        verbose_name = "training-code rule setting"

    def __str__(self) -> str:
        return f"{self.cluster.name}: {self.get_rule_display()}"


class Article(Sourced):
    slug = models.SlugField(unique=True)
    title = models.CharField(max_length=200)
    body = models.TextField(help_text="Markdown; unsafe HTML is removed when shown.")
    clusters = models.ManyToManyField(
        Cluster,
        blank=True,
        related_name="articles",
        help_text="Empty: it applies to every cluster.",
    )
    published = models.BooleanField(default=True)
    order = models.PositiveSmallIntegerField(default=100)
    updated = models.DateTimeField(auto_now=True)
    history = HistoricalRecords(m2m_fields=[clusters])

    class Meta:
        ordering = ["order", "title"]

    def __str__(self) -> str:
        return self.title


class Revision(models.Model):
    """One row whose token changes whenever guidance that guidance.published keeps is saved or
    deleted (right after it, in its transaction if there is one): each process compares it to
    decide whether what it keeps is still current."""

    token = models.CharField(max_length=32)

    def __str__(self) -> str:
        return self.token


class Document(models.Model):
    """A guidance document as the portal shows it, read from GUIDANCE_DOCS_DIR by
    `manage.py import_guidance_documents` (and `seed_guidance`): the text lives in the
    database, never in the repository. Sources that name its file link to its sections."""

    file_name = models.CharField(max_length=200, unique=True)
    slug = models.SlugField(max_length=200, unique=True)
    title = models.CharField(max_length=300)
    text = models.TextField()
    markup = models.CharField(max_length=20)
    # [{"path": [heading, ...], "anchor": "..."}, ...] as guidance.doc_outline reads the text:
    # kept so that linking a source needs no parsing.
    sections = models.JSONField(default=list)
    imported = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["file_name"]

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("guidance:document", args=[self.slug])
