"""A pasted script as the composer's fields ("Open in the composer" on the script checker): what
its #SBATCH lines and its commands say, as values the composer's form takes, and in words what
the composer will not have. Pure: the script's text and the cluster's facts in, values out."""

import re
import shlex
from dataclasses import dataclass, field

from django import forms

from guidance.engine.script_check import (
    Script,
    gpu_request,
    gres_gpus,
    parse_script,
    parse_time_limit,
    read_count,
)
from guidance.engine.shell import ALWAYS_SET, MODULE_NAME, variables_in
from guidance.engine.types import Cluster
from jobs.compose import sweep_script
from jobs.compose.forms import ComposeForm
from jobs.compose.script_spec import NAME
from jobs.slurm.values import SlurmParseError, parse_memory_mb

# What runs the program, as the first word of a line (after VAR=value and exec, time, nohup).
PROGRAM = re.compile(
    r"(?:[A-Za-z_]\w*=\S*\s+)*(?:(?:exec|time|nohup)\s+)*"
    r"(?:srun|mpirun|mpiexec|torchrun|python[0-9.]*|accelerate|deepspeed|horovodrun|apptainer"
    r"|singularity|julia|Rscript|\./\S+)(?=\s|$)"
)
ASSIGNMENT = re.compile(r"(?:export\s+)?([A-Za-z_]\w*)=(\S*)$")
USED_VARIABLE = re.compile(r"\$\{?([A-Za-z_]\w*)")
# Options the composer has a field for; the others it writes its own way, or not at all.
CARRIED = frozenset(
    {"job-name", "account", "partition", "nodes", "time", "array", "mem", "cpus-per-task"}
    | {"gres", "gpus", "gpus-per-node", "gpus-per-task"}
)
SHOWN_LINES = 3  # of the shell lines left out, by name; the rest are counted
# A portal sweep's command as the user wrote it, placeholders and all (its runs' are in `case`).
SWEEP_COMMAND = re.compile(
    rf"^JOB_COMMAND=({sweep_script.QUOTED_WORD})[ \t]*(?:#.*)?$", re.MULTILINE
)
# The runs each job of a grouped sweep runs in turn: its loop's `(group - 1) * N`.
GROUP_SIZE = re.compile(r"\(group - 1\) \* (\d+)")


@dataclass
class Carried:
    values: dict[str, str] = field(default_factory=dict)  # the form's field -> its value
    left_out: list[str] = field(default_factory=list)  # what the composer will not have


def carry(text: str, cluster: Cluster) -> Carried:
    """The composer's fields for the script on the cluster; only values the form takes."""
    parsed = parse_script(text)
    carried = Carried({"cluster": cluster.slug})
    _names(parsed, carried)
    _gpus(parsed, cluster, carried)
    runs = sweep_script.runs_in(text)
    _time(parsed, carried, runs_per_job(text) if runs else 0)
    _by_hand(parsed, cluster, carried)
    others = sorted(
        {str(d).partition("=")[0] for d in parsed.directives if d.option not in CARRIED}
    )
    if others:
        carried.left_out.append(
            f"the #SBATCH options {', '.join(others)}: the composer writes its own"
        )
    _commands(parsed, cluster, carried)
    if runs:  # the sweep's own command, over any line that runs a program
        _sweep(text, runs, carried)
    return carried


def sweep_jobs(text: str) -> tuple[int, int, int] | None:
    """Of a sweep the portal wrote: the runs the script runs (all, or a re-run's), the jobs
    they go in (its array's tasks, or one) and the parts of each run's chain (1 without one);
    None for another script."""
    if not sweep_script.runs_in(text):
        return None
    array = parse_script(text).option("array")
    read = _array(array) if array else None
    jobs = read[0] if read else 1
    grouped = sweep_script.RUNS_LINE.search(text)
    runs = len(grouped.group(1).split()) if grouped else jobs
    parts = sweep_script.CHAIN_PARTS.search(text)
    return runs, jobs, int(parts.group(1)) if parts else 1


def _names(parsed: Script, carried: Carried) -> None:
    for option, name in (("job-name", "job_name"), ("account", "account")):
        value = parsed.option(option)
        if value is None:
            continue
        if NAME.fullmatch(value):
            carried.values[name] = value
        else:
            carried.left_out.append(f"--{option}={value}: not a name the composer takes")


def _count(value: str | None) -> int:
    return (read_count(value) if value else None) or 1


def _gpu_requests(parsed: Script, nodes: int) -> list[tuple[str, str, str | None, int]]:
    """(option, value, type, GPUs in all) of each GPU request in the script."""
    ntasks = parsed.option("ntasks")
    tasks = _count(ntasks) if ntasks else _count(parsed.option("ntasks-per-node")) * nodes
    found = []
    for option, times in (("gres", nodes), ("gpus-per-node", nodes), ("gpus", 1)):
        if (value := parsed.option(option)) is not None:
            kind, count = gres_gpus(value) if option == "gres" else gpu_request(value)
            if count:
                found.append((option, value, kind, count * times))
    if (value := parsed.option("gpus-per-task")) is not None:
        kind, count = gpu_request(value)
        if count:
            found.append(("gpus-per-task", value, kind, count * tasks))
    return found


def _gpus(parsed: Script, cluster: Cluster, carried: Carried) -> None:
    asked = parsed.option("nodes")
    nodes = (read_count(asked) if asked else None) or 0  # "2-4": at least 2
    if nodes:
        carried.values["nodes"] = str(nodes)
    nodes = nodes or 1
    requests = _gpu_requests(parsed, nodes)
    if not requests:
        return
    option, value, kind, total = requests[0]  # scripts give one; of several, the first here
    carried.values["gpu_count"] = str(total)
    if total > 1 or nodes > 1:
        # The script asks for them: the composer gives one GPU unless the program uses several.
        carried.values["multi_gpu"] = "on"
    if kind:
        known = cluster.gpu_type(kind)
        if known:
            carried.values["gpu_type"] = known.name
        else:
            carried.left_out.append(
                f"the GPU type “{kind}” (--{option}={value}), which {cluster.name} does not "
                "publish: the composer recommends one"
            )


def _array(value: str) -> tuple[int, bool] | None:
    """(tasks, one at a time) of --array=1-4%1, 0-9:2, 1,3,5; None if unreadable."""
    ranges, _, limit = value.partition("%")
    tasks = 0
    for item in ranges.split(","):
        match = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", item.strip())
        if not match:
            return None
        first, last, step = match.groups()
        tasks += len(range(int(first), int(last or first) + 1, int(step or 1)))
    return (tasks, limit.strip() == "1") if tasks else None


def _time(parsed: Script, carried: Carried, runs_per_job: int = 0) -> None:
    """`runs_per_job`: of a sweep the portal wrote, whose array is its runs (or groups of them)
    and whose time limit is that of the runs each job runs in turn; 0 for another script."""
    value = parsed.option("time")
    minutes = parse_time_limit(value) if value else None
    if value is not None and (minutes is None or minutes == float("inf") or minutes <= 0):
        carried.left_out.append(f"--time={value}: the composer asks for the duration in hours")
        minutes = None
    array = parsed.option("array")
    read = _array(array) if array else None
    if runs_per_job:
        cap = (array or "").partition("%")[2].strip()
        if cap.isdigit() and int(cap) >= 1:
            carried.values["runs_at_once"] = cap
        # The duration the composer asks for is each run's.
        minutes = minutes / runs_per_job if minutes else None
    elif array and read is None:
        carried.left_out.append(f"--array={array}")
    elif read and read[1]:
        # A chain: each job resumes from the last one's checkpoint, for the time of them all.
        carried.values["checkpointing"] = "on"
        minutes = minutes * read[0] if minutes else None
    elif read:
        carried.values["similar_runs"] = str(read[0])
        carried.left_out.append(
            f"the job array itself (--array={array}): the composer writes one job and counts "
            f"{read[0]} similar runs"
        )
    if minutes:
        # Ten digits: 100 minutes reads 1.666666667 hours, and comes back as 100 minutes.
        carried.values["hours"] = f"{minutes / 60:.10g}"


def _sweep(text: str, runs: list[sweep_script.ScriptRun], carried: Carried) -> None:
    """A sweep the portal wrote: its runs as one line each (whether a grid or lines made them,
    lines give the same runs back), or their count where they are repeats, and its command as
    the user wrote it, with the placeholders the runs fill in."""
    if any(run.values for run in runs):
        carried.values["sweep_runs"] = "\n".join(
            " ".join(f"{name}={shlex.quote(value)}" for name, value in run.values) for run in runs
        )
    else:
        carried.values["similar_runs"] = str(len(runs))
    found = SWEEP_COMMAND.search(text)
    words = _words(found.group(1)) if found else []
    if len(words) == 1 and len(words[0]) <= _field("command").max_length:
        carried.values["command"] = words[0]


def runs_per_job(text: str) -> int:
    """1 in an array of runs; the runs each job takes in turn where short runs are grouped."""
    found = GROUP_SIZE.search(text) if sweep_script.RUNS_LINE.search(text) else None
    return int(found.group(1)) if found else 1


def _by_hand(parsed: Script, cluster: Cluster, carried: Carried) -> None:
    """Memory, CPUs and the partition, which the composer otherwise recommends."""
    if (partition := parsed.option("partition")) is not None:
        wanted = partition.casefold()
        found = next(
            (
                p.name
                for p in cluster.partitions
                if wanted in (p.name.casefold(), p.slurm_partition.casefold())
            ),
            None,
        )
        if found:
            carried.values["partition"] = found
        else:
            carried.left_out.append(
                f"--partition={partition}, which the portal does not know on {cluster.name}"
            )
    if (memory := parsed.option("mem")) is not None:
        try:
            megabytes = parse_memory_mb(memory.upper())
        except SlurmParseError:
            megabytes = None
        if megabytes and megabytes >= 1:
            carried.values["memory"] = memory
        else:
            carried.left_out.append(f"--mem={memory}: the composer recommends the memory")
    if (cpus := parsed.option("cpus-per-task")) is not None:
        if cpus.isdigit() and 1 <= int(cpus) <= _field("cpus_per_task").max_value:
            carried.values["cpus_per_task"] = cpus
        else:
            carried.left_out.append(f"--cpus-per-task={cpus}")


def _words(line: str) -> list[str]:
    try:
        return shlex.split(line, comments=True)
    except ValueError:  # an unclosed quote: the plain words will do
        return line.split()


def _commands(parsed: Script, cluster: Cluster, carried: Carried) -> None:
    """The last line that runs a program is the command; module lines and a virtualenv's
    activation have fields of their own; the rest (data staging, set-up) is named."""
    runs = [line for line in parsed.commands if PROGRAM.match(line)]
    command = runs[-1] if runs else None
    if command is not None and len(command) <= _field("command").max_length:
        carried.values["command"] = command
    elif command is not None:
        carried.left_out.append("the command, which is longer than the composer takes")
    assigned: dict[str, str] = {}
    modules: list[str] = []
    other: list[str] = []
    for line in parsed.commands:
        words = _words(line)
        if line == command:
            continue
        if words[:2] in (["module", "load"], ["module", "add"]) or words[:1] == ["ml"]:
            modules += [w for w in words[1 if words[0] == "ml" else 2 :] if not w.startswith("-")]
        elif len(words) == 2 and words[0] in ("source", ".") and words[1].endswith("/bin/activate"):
            _virtualenv(words[1].removesuffix("/bin/activate"), cluster, carried)
        elif match := ASSIGNMENT.match(line):
            assigned[match.group(1)] = line
        else:
            other.append(line)
    _modules(modules, cluster, carried)
    for name in dict.fromkeys(USED_VARIABLE.findall(command or "")):
        if name in assigned:
            carried.left_out.append(
                f"{assigned[name]}, which the command uses: write its value into the command"
            )
    if other:
        shown = ", ".join(other[:SHOWN_LINES]) + (
            f" and {len(other) - SHOWN_LINES} more" if len(other) > SHOWN_LINES else ""
        )
        carried.left_out.append(
            f"the script's other lines ({shown}): the composer stages the data from the data "
            "path you give it and writes its own set-up"
        )


def _modules(modules: list[str], cluster: Cluster, carried: Carried) -> None:
    if not modules:
        return
    listed = " ".join(modules)
    if not cluster.environment.modules:
        carried.left_out.append(
            f"the modules ({listed}): jobs on {cluster.name} have no module command the portal "
            "knows of"
        )
    elif not all(MODULE_NAME.fullmatch(m) for m in modules):
        carried.left_out.append(f"the modules ({listed}): not all of them are module names")
    else:
        carried.values["modules"] = listed


def _virtualenv(path: str, cluster: Cluster, carried: Carried) -> None:
    site = {name for name, _ in cluster.environment.variables}
    unknown = [v for v in variables_in(path) if v not in ALWAYS_SET | site]
    if not path:
        carried.left_out.append("the virtualenv at /: not a folder a job can use")
    elif unknown:
        carried.left_out.append(
            f"the virtualenv {path}: jobs on {cluster.name} have no ${unknown[0]} the portal "
            "knows of (a variable the script sets itself is not carried)"
        )
    else:
        carried.values |= {"environment": "venv", "environment_path": path}


def _field(name: str) -> forms.Field:
    return ComposeForm.base_fields[name]


def form_defaults() -> dict[str, str]:
    """What the composer's form starts with, for the fields it cannot leave empty: a link fills
    the form in, so these must come with it."""
    defaults = {}
    for name, form_field in ComposeForm.base_fields.items():
        if form_field.initial is not None:
            defaults[name] = str(form_field.initial)
        elif form_field.required and type(form_field) is forms.ChoiceField:
            defaults[name] = str(form_field.choices[0][0])
    return defaults


def composer_query(carried: Carried) -> dict[str, str]:
    return form_defaults() | carried.values
