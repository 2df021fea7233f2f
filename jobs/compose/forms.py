"""The composer's form: the advice form's questions plus what the script itself needs."""

from dataclasses import dataclass, replace

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS
from django.core.validators import RegexValidator

from guidance.citations import cite, known_documents
from guidance.engine import DataKind, JobSpec, Launch, Overrides, sweep
from guidance.engine.notes import describe_hours
from guidance.engine.shell import (
    ALWAYS_SET,
    MODULE_NAME,
    SLURM_JOB_VARIABLES,
    pattern_in,
    variables_in,
)
from guidance.engine.slurm_time import parse_seconds
from guidance.engine.sources import Source
from guidance.engine.storage import checkpoint_plan, results_default
from guidance.facts import cluster_facts
from guidance.forms import AdviceForm, ClusterChoiceField, NameChoiceField
from guidance.models import Cluster
from jobs.compose import script_spec
from jobs.slurm.values import SlurmParseError, parse_memory_mb

NAME_RULE = (
    "Use letters, digits, '.', '_', '+' or '-' (no spaces), starting with a letter or digit."
)
BUILD_ON_NODE = "requirements"  # the job builds its virtualenv: the plan keeps a folder for it
ENVIRONMENTS = [
    ("none", "None: the login environment, and the modules above if any"),
    ("venv", "Activate an existing virtualenv"),
    (BUILD_ON_NODE, "Build a virtualenv on the node from a requirements file"),
]


OVERRIDES = ("partition", "time_limit", "memory", "cpus_per_task")
# What only a Slurm script uses: a cluster with another scheduler (Run:ai) does not ask for it.
SLURM_ONLY = frozenset(
    {
        "account",
        "modules",
        "environment",
        "environment_path",
        "launch",
        "mail_user",
        "results_dir",
        # A sweep's runs are the script's: another scheduler gets the advice for one run.
        "sweep_grid",
        "sweep_runs",
        "runs_at_once",
        *OVERRIDES,
    }
)

# What a Slurm-only field means when it is not asked: as if left empty.
_NOT_ASKED = {
    "environment": "none",
    "modules": (),
    "partition": None,
    "time_limit": None,
    "memory": None,
    "cpus_per_task": None,
}


@dataclass(frozen=True)
class Section:
    slug: str
    title: str
    fields: list[forms.BoundField]


def _name_field(label: str, **kw) -> forms.CharField:
    return forms.CharField(
        label=label,
        max_length=64,
        # RegexValidator searches: anchor the pattern so that the whole value must match.
        validators=[RegexValidator(rf"\A{script_spec.NAME.pattern}\Z", NAME_RULE)],
        **kw,
    )


def _cited(source: Source | None) -> str:
    return f" ({cite(source, known_documents()).label})" if source else ""


def read_sweep(grid: str, lines: str, count: int, command: str) -> sweep.Sweep | None:
    """The runs: a grid, one line per run, or `count` repeats of the command; None for one run.
    A SweepError names the composer's field at fault (the API's fields have the same names)."""
    grid, lines = grid.strip(), lines.strip()
    field = "sweep_runs" if lines else "sweep_grid"
    try:
        if grid and lines:
            raise sweep.SweepError("Give a grid or one line per run, not both.", "sweep_runs")
        if grid:
            made = sweep.from_grid(sweep.grid_from_text(grid), command)
        elif lines:
            made = sweep.from_lines(lines, command)
        else:
            return sweep.repeats(count, command) if count > 1 else None
    except sweep.SweepError as error:
        if error.field == "sweep":  # the engine's word for the runs as given
            raise sweep.SweepError(str(error), field) from error
        raise
    runs = len(made.runs)
    if count not in (1, runs):
        raise sweep.SweepError(
            f"The sweep has {runs} runs: leave this at 1, or make it {runs}.", "similar_runs"
        )
    return made


class ComposeForm(AdviceForm):
    cluster = ClusterChoiceField()
    job_name = _name_field("Job name", initial="train")
    account = _name_field(
        "Account", required=False, help_text="The allocation to bill, e.g. def-someuser."
    )
    data_path = forms.CharField(
        label="Data path",
        required=False,
        max_length=1000,
        help_text=f"The dataset on shared storage: {DataKind.in_words()}. Your command finds it "
        "at $DATA_PATH.",
    )
    data_kind = forms.ChoiceField(
        label="The data path is",
        required=False,
        choices=[("", "Tell from its name"), *((k.value, k.label) for k in DataKind)],
        help_text="How the job stages it: a folder is copied, an archive extracted on the node, "
        "a file copied.",
    )
    results_dir = forms.CharField(
        label="Results directory",
        required=False,  # the cluster's default fills it; clean() says why when there is none
        max_length=1000,
        help_text="Persistent storage for results.",
    )
    # The results directory the page last offered as the cluster's default: while the field
    # still holds it, the user has not typed their own, and it follows the chosen cluster.
    results_default = forms.CharField(required=False, widget=forms.HiddenInput)
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
        help_text="Runs with $DATA_PATH (the data, staged or in place), $STAGE_DIR, "
        "$RESULTS_DIR, $CHECKPOINT_DIR and, in a chain, $LAST_CHECKPOINT set.",
    )
    launch = forms.ChoiceField(
        label="How the command starts",
        required=False,
        choices=[("", "Tell from the command"), *((k.value, k.label) for k in Launch)],
        help_text="On several GPUs or nodes: whether the script starts the command on every "
        "node, or the command starts its own tasks (srun, mpirun).",
    )
    sweep_grid = forms.CharField(
        label="Parameter grid",
        required=False,
        max_length=20_000,
        widget=forms.Textarea(
            attrs={
                "rows": 3,
                "spellcheck": "false",
                "placeholder": "lr = 0.1 0.01 0.001\nseed = 1 2",
            }
        ),
        help_text="One parameter per line: its name, =, its values (separated by spaces or "
        "commas; quote a value that holds a space). Every combination is a run. Write {lr} in "
        "the command where the value goes; the run also has it as $lr.",
    )
    sweep_runs = forms.CharField(
        label="Or one run per line",
        required=False,
        max_length=100_000,
        widget=forms.Textarea(
            attrs={"rows": 3, "spellcheck": "false", "placeholder": "lr=0.1 seed=1\nlr=0.01 seed=7"}
        ),
        help_text="Instead of a grid, for runs that are not every combination: name=value "
        "pairs, the same names on every line.",
    )
    runs_at_once = forms.IntegerField(
        label="At most this many jobs at once",
        required=False,
        min_value=1,
        max_value=1000,
        help_text="Empty: as many as the queue starts. A cap leaves GPUs for others (and your "
        "share for your other jobs).",
        error_messages={"invalid": "Enter a whole number, e.g. 4."},
    )
    mail_user = forms.EmailField(
        label="E-mail me when it ends or fails", required=False, max_length=254
    )
    # Set by hand instead of the recommendation (the engine checks them: guidance.engine.overrides).
    partition = NameChoiceField(label="Node type (partition)", required=False)
    time_limit = forms.CharField(
        label="Time limit of each job",
        required=False,
        max_length=20,
        help_text="As Slurm writes it: 12:00:00, 1-12:00:00 or minutes. Empty: recommended.",
    )
    memory = forms.CharField(
        label="Memory per node",
        required=False,
        max_length=20,
        help_text="E.g. 64G or 64000M. Empty: recommended.",
    )
    cpus_per_task = forms.IntegerField(
        label="CPUs per task",
        required=False,
        min_value=1,
        max_value=100_000,
        help_text="Empty: recommended.",
        error_messages={"invalid": "Enter a whole number of CPUs, e.g. 6."},
    )

    field_order = [
        "cluster", "job_name", "account", "workload", "dataset_gb", "file_count",
        "data_location", "data_path", "data_kind", "gpu_type", "gpu_count", "gpu_mem_gb", "hours",
        "checkpointing", "multi_gpu", "nodes", "expects_full_utilization", "similar_runs",
        "sweep_grid", "sweep_runs", "runs_at_once", "modules", "environment", "environment_path",
        "command", "launch", "results_dir", "mail_user", "partition", "time_limit", "memory",
        "cpus_per_task",
    ]  # fmt: skip

    # The form in the order people think of a job; the last section is folded away until used.
    sections = [
        ("job", "The job", ("cluster", "job_name", "account", "workload")),
        (
            "data",
            "Its data",
            ("dataset_gb", "file_count", "data_location", "data_path", "data_kind", "results_dir"),
        ),
        (
            "gpus",
            "GPUs and time",
            (
                "gpu_type", "gpu_count", "gpu_mem_gb", "multi_gpu", "nodes", "hours",
                "checkpointing", "expects_full_utilization",
            ),
        ),
        (
            "run",
            "Environment and command",
            ("modules", "environment", "environment_path", "command", "launch", "mail_user"),
        ),
        (
            "sweep",
            "Many runs (a sweep)",
            ("similar_runs", "sweep_grid", "sweep_runs", "runs_at_once"),
        ),
        ("by-hand", "Set by hand", OVERRIDES),
    ]  # fmt: skip

    def grouped(self) -> list[Section]:
        return [
            Section(slug, title, [self[name] for name in names])
            for slug, title, names in self.sections
        ]

    @property
    def sets_by_hand(self) -> bool:
        return (
            any((self.data.get(name) or "").strip() for name in OVERRIDES)
            if self.is_bound
            else False
        )

    def advice_is_valid(self) -> bool:
        """Whether the questions the advice needs are answered, though others may not be yet.
        An objection of the engine's (also one about no field) means it has had its say."""
        self.is_valid()
        asked = (*AdviceForm.base_fields, "cluster", *OVERRIDES, NON_FIELD_ERRORS)
        return not any(name in self.errors for name in asked)

    def offer_choices(self, cluster: Cluster | None) -> None:
        super().offer_choices(cluster)
        partitions = cluster.partitions.all() if cluster else ()
        self.offer(
            "partition",
            cluster,
            "node type",
            [
                (p.name, f"{p.name}: {p.gpus_per_node} {p.gpu_type.name} GPUs per node, up to "
                 f"{describe_hours(p.max_hours)}")
                for p in partitions
            ],
        )  # fmt: skip

    def clean_command(self) -> str:
        # A browser posts a textarea's line breaks as CRLF; a script's lines end in LF only.
        return self.cleaned_data["command"].replace("\r\n", "\n")

    def clean_time_limit(self) -> int | None:
        text = self.cleaned_data["time_limit"].strip()
        if not text:
            return None
        try:
            seconds = parse_seconds(text)
        except ValueError:
            seconds = None
        if seconds is None or seconds == float("inf") or seconds <= 0:
            raise forms.ValidationError(
                f"“{text}” is not a time limit Slurm takes: write e.g. 12:00:00 (12 hours), "
                "1-12:00:00 (a day and a half) or 90 (minutes)."
            )
        return -(-int(seconds) // 60)  # whole minutes, rounded up

    def clean_memory(self) -> int | None:
        text = self.cleaned_data["memory"].strip()
        if not text:
            return None
        try:
            megabytes = parse_memory_mb(text.upper())
        except SlurmParseError:
            megabytes = None
        if not megabytes or megabytes < 1:
            raise forms.ValidationError(
                f"“{text}” is not an amount of memory: write e.g. 64G or 64000M."
            )
        return int(-(-megabytes // 1))

    def __init__(self, data=None, *args, **kwargs):
        # A copy: the results directory follows the cluster into the data (clean_results_dir).
        super().__init__(data.copy() if data is not None else None, *args, **kwargs)
        self.results_default_followed = False
        self.results_default_reason = ""
        # The advice form's question, asked here as the sweep's simplest kind.
        runs = self.fields["similar_runs"]
        runs.label = "Runs of the same command"
        runs.help_text = (
            "E.g. 5 for five seeds: each run has its number as $RUN_NUMBER and a folder of its "
            "own. With a grid or run lines, leave it at 1."
        )
        self.fields["hours"].help_text = "Of each run, in a sweep."
        if not self.is_bound:
            # The cluster the page starts on, as the advice form found it for its lists.
            default = self._offer_results_default(self.fields["cluster"].loaded)
            self.initial.setdefault("results_dir", default)
            self.initial["results_default"] = default

    def _offer_results_default(self, cluster: Cluster | None) -> str:
        """The cluster's default results directory, with why and on whose advice in the help."""
        if cluster is None:
            return ""
        facts = cluster_facts(cluster)
        default, why, source = results_default(facts)
        self.results_default_reason = why
        checkpoints = checkpoint_plan(facts)
        where = (
            f"in {checkpoints.root}/<job name>"
            if checkpoints.root
            else "in the results' checkpoints folder"
        )
        self.fields["results_dir"].help_text = (
            f"Persistent storage for results. {why}{_cited(source)} Checkpoints go {where}: "
            f"{checkpoints.reason}{_cited(checkpoints.source)}"
        )
        return default

    def clean_data_path(self) -> str:
        path = self.cleaned_data["data_path"]
        if pattern := pattern_in(path):
            shards = DataKind.SHARDS.label.split(" (")[0]
            # The folder above the first part that holds the pattern: what to give instead.
            folder = path[: path.rfind("/", 0, path.find(pattern))] or "the folder"
            raise forms.ValidationError(
                f"The data path holds a pattern ({pattern}), which the job does not expand: "
                "it would look for a file of that very name and stop. Give the folder that "
                f"holds the files instead ({folder}); for .tar shards, choose '{shards}' as the "
                "data kind."
            )
        return path

    def clean_results_dir(self) -> str:
        """The cluster's default while the user has not typed their own: empty, or still the
        default the page offered for the cluster chosen before."""
        typed = self.cleaned_data["results_dir"].strip()
        default = self._offer_results_default(self.cleaned_data.get("cluster"))
        if not typed or typed == self.data.get("results_default", "").strip():
            self.results_default_followed = typed != default
            typed = default
            self.data["results_dir"] = default
        self.data["results_default"] = default
        return typed

    def clean_modules(self) -> tuple[str, ...]:
        modules = tuple(self.cleaned_data["modules"].split())
        bad = [m for m in modules if not MODULE_NAME.fullmatch(m)]
        if bad:
            raise forms.ValidationError(
                f"Not a module name: {', '.join(bad)}. Module names use letters, digits and ._+/-."
            )
        return modules

    def _clean_fields(self) -> None:
        """On a cluster that takes no Slurm script, what only a script uses is neither required
        nor checked nor used: a value typed for a Slurm cluster chosen before stays in the page,
        for when one is chosen again, and cannot hold back the advice with an error not shown."""
        super()._clean_fields()
        cluster = self.cleaned_data.get("cluster")
        if cluster is None or cluster.takes_scripts:
            return
        for name in SLURM_ONLY:
            self._errors.pop(name, None)
            self.cleaned_data[name] = _NOT_ASKED.get(name, "")

    def clean(self) -> dict:
        data = super().clean()
        if data.get("environment", "none") != "none" and not data.get("environment_path"):
            self.add_error("environment_path", "Enter the path of the virtualenv or the file.")
        cluster = data.get("cluster")
        if cluster is not None and cluster.scheduler == "slurm":  # others take no scripts
            if not data.get("results_dir"):
                self.add_error("results_dir", self.results_default_reason or "Enter a folder.")
            self._check_site(cluster, data)
        self._read_sweep(data)
        return data

    def _read_sweep(self, data: dict) -> None:
        data["sweep"] = None
        try:
            data["sweep"] = read_sweep(
                data.get("sweep_grid", ""),
                data.get("sweep_runs", ""),
                data.get("similar_runs") or 1,
                data.get("command", ""),
            )
        except sweep.SweepError as error:
            self.add_error(error.field if error.field in self.fields else None, str(error))

    def _check_site(self, cluster: Cluster, data: dict) -> None:
        """What the cluster's jobs cannot have: modules without a module system, paths that
        name a variable the site does not set."""
        environment = getattr(cluster, "job_environment", None)
        if data.get("modules") and not (environment and environment.modules):
            instead = "leave this empty and use a virtualenv"
            self.add_error(
                "modules",
                f"Jobs on {cluster.name} have no module command (its published job "
                f"environment): {instead}. If they do, the portal's admins tick 'module command "
                "in jobs' in its job environment."
                if environment
                else _unpublished(cluster, "a module command", instead),
            )
        known = ALWAYS_SET | SLURM_JOB_VARIABLES
        if environment:
            known |= {name for name, _ in environment.pairs()}
        for field in ("data_path", "results_dir", "environment_path"):
            unknown = [v for v in variables_in(data.get(field) or "") if v not in known]
            if unknown:
                variable = unknown[0]
                instead = "give the full path instead"
                self.add_error(
                    field,
                    f"Jobs on {cluster.name} have no ${variable} (its published job "
                    f"environment): {instead}. If they do, the portal's admins add {variable} "
                    "to its job environment's variables."
                    if environment
                    else _unpublished(cluster, f"${variable}", instead),
                )

    def job_spec(self) -> JobSpec:
        data = self.cleaned_data
        kind = data.get("data_kind")
        sweep_runs = data.get("sweep")
        return replace(
            super().job_spec(),
            data_path=data.get("data_path", ""),
            data_kind=DataKind(kind) if kind else None,
            builds_environment=data.get("environment") == BUILD_ON_NODE,
            command=data.get("command", ""),
            launch=Launch(data["launch"]) if data.get("launch") else None,
            overrides=Overrides(
                partition=data.get("partition") or None,
                minutes=data.get("time_limit"),
                memory_mb=data.get("memory"),
                cpus_per_task=data.get("cpus_per_task"),
            ),
            results_dir=data.get("results_dir", ""),
            sweep=sweep_runs,
            similar_runs=len(sweep_runs.runs) if sweep_runs else data.get("similar_runs") or 1,
            runs_at_once=data.get("runs_at_once") or 0,
        )


class ScriptEditForm(forms.Form):
    """What the composer sends beside the job's values: the script as edited in the preview and
    the name to save it as. CharField refuses a NUL, which neither PostgreSQL nor sbatch takes,
    beside the editor."""

    script_text = forms.CharField(label="The script", required=False, strip=False)
    composition_name = forms.CharField(label="Save as", required=False)


def _unpublished(cluster: Cluster, what: str, instead: str) -> str:
    """For a cluster with no job environment yet (one an admin has just added): the portal does
    not know whether its jobs have `what`, so it says so and who can tell, not that they lack it."""
    return (
        f"{cluster.name} has no published job environment yet, so the portal cannot tell whether "
        f"its jobs have {what}: {instead}, or ask the portal's admins to publish the cluster's "
        "job environment (what every job there gets)."
    )
