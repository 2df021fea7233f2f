"""What a script is made from: one dataclass, validated before anything is rendered.

Where Slurm reads a value literally (the #SBATCH lines, which sbatch does not unquote) it must
match a strict pattern; free text (the command, paths) is checked for what no script line may hold
and is shell-quoted by the renderer (jobs/compose/script.py).
"""

import re
from dataclasses import dataclass, field

from guidance.engine import DataKind, Launch, Placement, PythonBuilder
from guidance.engine.shell import MODULE_NAME, SAFE_PATH, VARIABLE_NAME
from guidance.engine.sweep import Sweep

# Where Slurm reads a value literally: names, accounts, partitions, GPU types, modules.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")
EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
# Control characters other than newline and tab have no business in a script.
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


# Free-text values, and the composer's field each comes from.
FORM_FIELDS = {
    "command": "command",
    "data_source": "data_path",
    "results_dest": "results_dir",
    "venv": "environment_path",
    "requirements": "environment_path",
}


class ScriptError(ValueError):
    """A value that cannot go into a script; `field` names the form field it came from."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Stage:
    """A step of the data plan, as the engine wrote it, with a comment saying why."""

    comment: str
    command: str


@dataclass(frozen=True)
class ScriptSpec:
    cluster: str
    job_name: str
    gpu_type: str
    gpus_per_node: int
    nodes: int
    cpus_per_task: int
    mem: str
    time: str
    command: str
    account: str = ""
    partition: str = ""
    tasks_per_node: int = 1
    launch: Launch = Launch.NODE  # who starts the command's processes on the nodes
    array: str = ""  # "1-3%1" for a chain, "1-20" for similar runs
    chain: bool = False
    checkpointing: bool = False
    mail_user: str = ""
    modules: tuple[str, ...] = ()
    venv: str = ""  # an existing virtualenv to activate
    requirements: str = ""  # or a requirements file to build one on the node
    placement: Placement = Placement.SHARED
    # The node-local tier's path ($SLURM_TMPDIR, $SCRATCH): staged data and a built virtualenv.
    stage_root: str = ""
    stage_per_job: bool = True
    data_source: str = ""
    data_kind: DataKind = DataKind.FOLDER
    # What the site gives every job (guidance's JobEnvironment).
    site_variables: tuple[tuple[str, str], ...] = ()
    python_module: str = ""
    python_builder: PythonBuilder = PythonBuilder.VENV
    results_dest: str = ""
    # Where checkpoints go ($SCRATCH/checkpoints): the job's folder there is named by the job, so
    # that every part of a chain finds it. "": with the results ($RESULTS_DEST/checkpoints).
    checkpoint_root: str = ""
    staging: tuple[Stage, ...] = ()
    copy_back: Stage | None = None
    cleanup: Stage | None = None  # removes the job's folder on the node (the plan says when)
    # Many runs of the command, each its own (sweep_script.py): an array task each, or, with
    # grouped_runs, that many runs one after another in each job.
    sweep: Sweep | None = None
    grouped_runs: int = 0
    # A sweep of chains: each run's array task requeues itself for its next part, this many at
    # most (array indices are the runs, so they cannot also be the parts).
    chain_parts: int = 0
    reasons: tuple[str, ...] = field(default=(), compare=False)

    @property
    def job_dir(self) -> str:
        """Where Slurm writes the job's output; it must exist before the job starts."""
        return f"portal-jobs/{self.job_name}"

    def validate(self) -> None:
        _match(NAME, self.job_name, "job_name", "Use letters, digits, '.', '_', '+' or '-'.")
        _match(NAME, self.gpu_type, "gpu_type", "Use letters, digits, '.', '_', '+' or '-'.")
        if self.account:
            _match(NAME, self.account, "account", "Use letters, digits, '.', '_', '+' or '-'.")
        if self.partition:
            _match(NAME, self.partition, "partition", "Use letters, digits, '.', '_' or '-'.")
        if self.mail_user:
            _match(EMAIL, self.mail_user, "mail_user", "Enter one e-mail address.")
        for module in (*self.modules, *filter(None, [self.python_module])):
            _match(MODULE_NAME, module, "modules", f"'{module}' is not a module name.")
        _match(SAFE_PATH, self.stage_root, "cluster", "The storage path published is not usable.")
        _match(
            SAFE_PATH,
            self.checkpoint_root,
            "cluster",
            "The checkpoint directory published is not usable.",
        )
        for name, value in self.site_variables:
            _match(VARIABLE_NAME, name, "cluster", "The job environment published is not usable.")
            _match(SAFE_PATH, value, "cluster", "The job environment published is not usable.")
        for name, form_field in FORM_FIELDS.items():
            value = getattr(self, name)
            if CONTROL.search(value):
                raise ScriptError(form_field, "Remove the control characters from this field.")
            if name != "command" and "\n" in value:
                raise ScriptError(form_field, "A path is one line.")
        if not self.command.strip():
            raise ScriptError("command", "Enter the command that runs your program.")
        if self.staging and not self.data_source.strip():
            raise ScriptError("data_path", "Enter the data path: the job copies it to the node.")
        if not self.results_dest.strip():
            raise ScriptError("results_dir", "Enter where results should go.")


def _match(pattern: re.Pattern, value: str, field: str, message: str) -> None:
    if not pattern.fullmatch(value):
        raise ScriptError(field, message)
