"""The sbatch script: one validated dataclass in, one readable bash script out.

Values a user typed are data, never code: each is validated against a strict pattern where Slurm
reads it (the #SBATCH lines, which sbatch does not unquote), or shell-quoted into a variable at the
top of the script. The command itself runs through `bash -c "$JOB_COMMAND"`, so no text the user
writes can add a directive, end a quote or change the script around it.
"""

import re
import shlex
import textwrap
from dataclasses import dataclass, field

from guidance.engine import Placement

# Where Slurm reads a value literally: names, accounts, partitions, GPU types, modules.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")
MODULE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+/-]{0,99}")
EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
# Admin-published storage paths may use variables ($SLURM_TMPDIR, $SCRATCH) but nothing else.
TIER_PATH = re.compile(r"[A-Za-z0-9_./${}-]*")
# Control characters other than newline and tab have no business in a script.
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

MONITORING_START = "# >>> GPU monitoring starts here (added by the portal when it submits) >>>"
MONITORING_STOP = "# <<< GPU monitoring stops here <<<"
WARNING_SECONDS = 300  # how long before the time limit a checkpointing job hears SIGUSR1


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
    array: str = ""  # "1-3%1" for a chain, "1-20" for similar runs
    chain: bool = False
    checkpointing: bool = False
    mail_user: str = ""
    modules: tuple[str, ...] = ()
    venv: str = ""  # an existing virtualenv to activate
    requirements: str = ""  # or a requirements file to build one on the node
    placement: Placement = Placement.SHARED
    stage_root: str = ""  # the tier's path: $SLURM_TMPDIR, $SCRATCH
    stage_per_job: bool = True
    data_source: str = ""
    results_dest: str = ""
    staging: tuple[Stage, ...] = ()
    copy_back: Stage | None = None
    cleanup: Stage | None = None
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
        for module in self.modules:
            _match(MODULE, module, "modules", f"'{module}' is not a module name.")
        _match(TIER_PATH, self.stage_root, "cluster", "The storage path published is not usable.")
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
            raise ScriptError("results_dir", "Enter where results and checkpoints should go.")


def _match(pattern: re.Pattern, value: str, field: str, message: str) -> None:
    if not pattern.fullmatch(value):
        raise ScriptError(field, message)


def _q(value: str) -> str:
    return shlex.quote(value)


# Paths may start with ~ or one of these variables, as people write them; the rest is literal.
PATH_START = re.compile(r"(~|\$HOME|\$\{HOME\}|\$SCRATCH|\$PROJECT|\$USER|\$SLURM_TMPDIR)(?=/|$)")


def _path(value: str) -> str:
    start = PATH_START.match(value)
    if not start:
        return _q(value)
    variable = "HOME" if start.group(1) in ("~", "${HOME}") else start.group(1)[1:]
    rest = value[start.end() :]
    return f'"${variable}"' + (_q(rest) if rest else "")


def _comment(text: str) -> list[str]:
    return [f"# {line}" for line in textwrap.wrap(" ".join(text.split()), 96)]


def render(spec: ScriptSpec) -> str:
    spec.validate()
    return "\n".join(_header(spec) + _body(spec)) + "\n"


def resource_options(spec: ScriptSpec, time: str) -> list[str]:
    """What the job asks Slurm for: the same for sbatch and for salloc."""
    options = [f"--account={spec.account}"] if spec.account else []
    if spec.partition:
        options.append(f"--partition={spec.partition}")
    return [
        *options,
        f"--nodes={spec.nodes}",
        f"--ntasks-per-node={spec.tasks_per_node}",
        f"--gres=gpu:{spec.gpu_type}:{spec.gpus_per_node}",
        f"--cpus-per-task={spec.cpus_per_task}",
        f"--mem={spec.mem}",
        f"--time={time}",
    ]


def _header(spec: ScriptSpec) -> list[str]:
    out = "%A_%a" if spec.array else "%j"
    lines = [
        "#!/bin/bash",
        f"# {spec.job_name}: written by the GPU portal for {spec.cluster}.",
        f"# Slurm does not create the output directory: run `mkdir -p {spec.job_dir}`",
        "# before `sbatch` (the portal does this when it submits the job).",
        *(line for reason in spec.reasons for line in _comment(reason)),
        f"#SBATCH --job-name={spec.job_name}",
        *(f"#SBATCH {option}" for option in resource_options(spec, spec.time)),
        f"#SBATCH --output={spec.job_dir}/slurm-{out}.out",
        f"#SBATCH --error={spec.job_dir}/slurm-{out}.err",
    ]
    if spec.array:
        lines.append(f"#SBATCH --array={spec.array}")
    if spec.checkpointing:
        # B: the batch shell gets the signal and passes it on to the program (see the trap).
        lines.append(f"#SBATCH --signal=B:USR1@{WARNING_SECONDS}")
    if spec.mail_user:
        lines += [f"#SBATCH --mail-user={spec.mail_user}", "#SBATCH --mail-type=END,FAIL"]
    return lines


def _body(spec: ScriptSpec) -> list[str]:
    return [
        "",
        "set -euo pipefail",
        *_values(spec),
        *_finish(spec),
        *_environment(spec),
        *_staging(spec),
        "",
        MONITORING_START,
        MONITORING_STOP,
        *_run(spec),
    ]


def _values(spec: ScriptSpec) -> list[str]:
    if spec.placement == Placement.SHARED:  # read in place, write straight to the destination
        folders = ['STAGE_DIR="$DATA_SOURCE"', 'RESULTS_DIR="$RESULTS_DEST"']
    else:
        # A tier shared by every job on the node (e.g. $SCRATCH) gets a folder per job.
        work_dir = spec.stage_root if spec.stage_per_job else f"{spec.stage_root}/$SLURM_JOB_ID"
        folders = [f'WORK_DIR="{work_dir}"', 'STAGE_DIR="$WORK_DIR/data"']
        folders.append('RESULTS_DIR="$WORK_DIR/results"')
    return [
        "",
        "# What you entered, quoted: data for the commands below, never code.",
        f"JOB_COMMAND={_q(spec.command)}",
        f"DATA_SOURCE={_path(spec.data_source)}",
        f"RESULTS_DEST={_path(spec.results_dest)}",
        *([f"VENV={_path(spec.venv)}"] if spec.venv else []),
        *([f"REQUIREMENTS={_path(spec.requirements)}"] if spec.requirements else []),
        *folders,
        'CHECKPOINT_DIR="$RESULTS_DEST/checkpoints"',
        "export DATA_SOURCE RESULTS_DEST STAGE_DIR RESULTS_DIR CHECKPOINT_DIR",
        'mkdir -p "$RESULTS_DIR" "$RESULTS_DEST" "$CHECKPOINT_DIR"',
    ]


def _finish(spec: ScriptSpec) -> list[str]:
    lines = ["", "# On any exit, also a failure or a time limit: save results, then clean up."]
    lines.append("finish() {")
    body = []
    if spec.copy_back:
        body += [f"    {line}" for line in _comment(spec.copy_back.comment)]
        body.append(f"    {spec.copy_back.command} || true")
    if spec.cleanup:
        body += [f"    {line}" for line in _comment(spec.cleanup.comment)]
        body.append(f"    {spec.cleanup.command} || true")
    lines += body or ["    :"]
    lines += ["}", "trap finish EXIT"]
    if spec.checkpointing:
        lines += [
            "",
            f"# {WARNING_SECONDS} s before the time limit Slurm sends USR1: pass it to the program",
            "# so it can write a checkpoint and exit.",
            'forward_usr1() { kill -USR1 "$program" 2>/dev/null || true; }',
            "trap forward_usr1 USR1",
        ]
    return lines


def _environment(spec: ScriptSpec) -> list[str]:
    lines = ["", "# Environment"]
    if spec.modules:
        lines.append(f"module load {' '.join(spec.modules)}")
    if spec.venv:
        lines.append('source "$VENV/bin/activate"')
    elif spec.requirements:
        # A virtualenv on local storage is much faster than one on shared storage (004).
        prefix = "srun --ntasks=$SLURM_NNODES --ntasks-per-node=1 " if spec.nodes > 1 else ""
        lines += [
            "export REQUIREMENTS",
            f'{prefix}bash -c \'virtualenv --no-download "$SLURM_TMPDIR/env" && '
            '"$SLURM_TMPDIR/env/bin/pip" install --no-index -r "$REQUIREMENTS"\'',
            'source "$SLURM_TMPDIR/env/bin/activate"',
        ]
    if len(lines) == 2:
        lines.append("# (none chosen: the login environment as sbatch passes it)")
    return lines


def _staging(spec: ScriptSpec) -> list[str]:
    if not spec.staging:
        return ["", "# Data: read in place from shared storage, in large chunks."]
    lines = ["", "# Data"]
    for stage in spec.staging:
        lines += [*_comment(stage.comment), stage.command]
    return lines


def _run(spec: ScriptSpec) -> list[str]:
    lines = ["", "# Run"]
    if spec.chain:
        lines += [
            "# Each job of the chain resumes from the newest checkpoint, if any (002).",
            "LAST_CHECKPOINT=$(find \"$CHECKPOINT_DIR\" -maxdepth 1 -type f -printf '%T@ %p\\n' "
            "| sort -n | tail -n 1 | cut -d' ' -f2-)",
            "export LAST_CHECKPOINT",
        ]
    launcher = "srun " if spec.nodes > 1 else ""
    # In the background and waited for, so that a trap can run while the program works; a trap
    # interrupts `wait`, and the second one then waits for the program to save and exit.
    return [
        *lines,
        f'{launcher}bash -c "$JOB_COMMAND" &',
        "program=$!",
        "status=0",
        'wait "$program" || status=$?',
        'if [ "$status" -gt 128 ] && kill -0 "$program" 2>/dev/null; then',
        "    status=0",
        '    wait "$program" || status=$?',
        "fi",
        'exit "$status"',
    ]
