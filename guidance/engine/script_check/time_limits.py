"""The job's --time: one Slurm can read, within the cluster's maximum, and checkpoints when long."""

import math
import re

from guidance.engine import sources
from guidance.engine.code_check.program import Program
from guidance.engine.code_check.resumes import resumes
from guidance.engine.notes import describe_hours
from guidance.engine.script_check.findings import Basis, Finding, Severity, set_directive
from guidance.engine.script_check.parse import Script, parse_time_limit
from guidance.engine.slurm_time import format_time
from guidance.engine.types import Cluster, Note, Rule

# Signs that the work resumes where it stopped; comments do not count, nor tar's progress
# option (tar --checkpoint=.5000 prints a dot every 5000 records).
CHECKPOINT_WORDS = re.compile(r"checkpoint|ckpt|resume|restart|requeue|dmtcp", re.IGNORECASE)
TAR_PROGRESS = re.compile(r"--checkpoint(-action)?(=\S*)?")


def check_time(script: Script, cluster: Cluster, notes: list[Note]) -> float | None:
    """The job's time limit in minutes, when the script gives a valid one."""
    value = script.option("time")
    given = script.given("time")
    lines = (given.line,) if given else ()
    if value is None and any("time" in r.meant for r in script.refused):
        return None  # the refused option's finding says what to write
    if value is None:
        defaults = {p.default_hours for p in cluster.partitions}
        default = (
            f" ({describe_hours(defaults.pop())} on {cluster.name})" if len(defaults) == 1 else ""
        )
        notes.append(
            Finding(
                "missing_time",
                "No --time: Slurm then gives the job the partition's default time limit"
                f"{default}, often too short to finish, or its maximum, which keeps the job "
                "waiting longer in the queue.",
                sources.SBATCH_ELEMENTS,
                "time",
                severity=Severity.ADVICE,
                fix="Ask for the time the job needs plus a margin, e.g. #SBATCH --time=0-03:00.",
            )
        )
        return None
    minutes = parse_time_limit(value)
    if minutes is None:
        notes.append(
            Finding(
                "bad_time",
                f"sbatch cannot read --time={value}, and refuses the script.",
                sources.SBATCH_TIME,
                "time",
                severity=Severity.FAILS,
                lines=lines,
                fix="Write minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS, e.g. "
                "--time=0-03:00 for three hours.",
            )
        )
        return None
    maximum = cluster.max_hours
    if maximum and minutes > maximum * 60:
        chunk = min(cluster.policy.checkpoint_chunk_hours, maximum) or maximum
        asked = _describe_minutes(minutes)
        jobs = "N" if math.isinf(minutes) else str(math.ceil(minutes / (chunk * 60)))
        notes.append(
            Finding(
                "over_max_duration",
                f"--time={value} asks for {asked}, over {cluster.name}'s maximum job duration "
                f"of {describe_hours(maximum)}: Slurm will not run it.",
                cluster.max_hours_source or sources.SBATCH_ELEMENTS,
                "time",
                severity=Severity.FAILS,
                lines=lines,
                fix="Make the program save checkpoints and resume from the latest one, and run "
                f"the work as a chain of {describe_hours(chunk)} jobs, one after another: "
                f"#SBATCH --array=1-{jobs}%1 with --time={format_time(chunk * 3600, days=True)}. "
                f"The fixed script asks for the maximum, {describe_hours(maximum)}.",
                edits=set_directive(
                    script, ("time",), f"--time={format_time(maximum * 3600, days=True)}"
                ),
            )
        )
    return minutes


def _describe_minutes(minutes: float) -> str:
    return "no time limit" if math.isinf(minutes) else describe_hours(minutes / 60)


def check_checkpoints(
    script: Script, cluster: Cluster, minutes: float | None, notes: list[Note]
) -> None:
    rule = cluster.rule(Rule.CHECKPOINT_LONG_JOBS)
    chunk = cluster.policy.checkpoint_chunk_hours
    if rule is None or minutes is None or minutes <= chunk * 60:
        return
    if any(n.code == "over_max_duration" for n in notes):
        return  # that note already asks for checkpoints and a chain
    array = script.option("array") or ""
    signs = array.endswith("%1") or script.has("requeue", "signal") or _says_checkpoint(script)
    if signs:
        return
    given = script.given("time")
    notes.append(
        Finding(
            "long_without_checkpoints",
            f"The job runs up to {_describe_minutes(minutes)}, longer than "
            f"{describe_hours(chunk)}, and the script shows no checkpoint or resume logic: an "
            "outage or the time limit would lose all the work.",
            rule.source,
            "time",
            severity=Severity.ADVICE,
            lines=(given.line,) if given else (),
            fix="Save checkpoints, resume from the latest one, and run "
            f"{describe_hours(chunk)} jobs as a chain (#SBATCH --array=1-N%1); shorter jobs also "
            "start sooner. If the program already resumes by itself, this is fine.",
        )
    )


# A chain's parts are the array's indices: "1-10%1", "1-4:1%1", "1,2,3%1".
ARRAY_RANGE = re.compile(r"^(\d+)-(\d+)(?::(\d+))?$")
TASK_ID = re.compile(r"\$\{?SLURM_ARRAY_TASK_ID\b")


def check_resume(
    script: Script, cluster: Cluster, notes: list[Note], program: tuple[Program, ...]
) -> None:
    """A chain (--array=1-N%1) or a requeued job saves work only where the program, started
    again, loads what the last part saved: read from the program where it is given, else
    asked where the script hands it nothing to resume from."""
    rule = cluster.rule(Rule.CHECKPOINT_LONG_JOBS)
    parts = _chain_parts(script.option("array") or "")
    requeued = script.has("requeue")
    if rule is None or not (parts > 1 or requeued):
        return
    restarts = "each part of the chain" if parts > 1 else "the requeued job"
    lines = tuple(d.line for d in script.directives if d.option in ("array", "requeue"))
    if program:
        if resumes(program) is not None:
            return
        notes.append(
            Finding(
                "chain_without_resume",
                f"{restarts.capitalize()} starts the program anew, and the program you gave "
                "loads no saved state (no torch.load, load_state_dict, ckpt_path or "
                f"resume_from_checkpoint): {restarts} redoes the work from the start.",
                rule.source,
                "time",
                severity=Severity.WASTES,
                lines=lines,
                fix="Save a checkpoint regularly and, at the start, load the latest one if there "
                "is one (model, optimizer, epoch), so that each part goes on from the last.",
                basis=Basis.PROGRAM,
            )
        )
        return
    sweep = parts > 1 and any(TASK_ID.search(c) for c in script.commands)
    if _says_checkpoint(script) or sweep:
        return  # it hands the program a checkpoint, or each index runs other work (a sweep)
    notes.append(
        Finding(
            "chain_without_resume",
            f"{restarts.capitalize()} starts the program anew, and the script hands it no "
            "checkpoint to resume from. Does the program load its latest checkpoint by itself? "
            f"If not, {restarts} redoes the work from the start.",
            rule.source,
            "time",
            severity=Severity.ADVICE,
            lines=lines,
            fix="Give the program beside the script to settle it. The program should load the "
            "latest checkpoint at its start, if there is one.",
            basis=Basis.QUESTION,
        )
    )


def _chain_parts(array: str) -> int:
    """How many jobs an array run one at a time (%1) holds; 0 when it is not such an array."""
    indices, _, limit = array.partition("%")
    if limit != "1":
        return 0
    count = 0
    for item in indices.split(","):
        found = ARRAY_RANGE.match(item.strip())
        if found:
            first, last, step = int(found[1]), int(found[2]), int(found[3] or 1)
            count += len(range(first, last + 1, max(step, 1)))
        elif item.strip().isdigit():
            count += 1
    return count


def _says_checkpoint(script: Script) -> bool:
    """A command names a checkpoint or resuming (tar's progress option aside)."""
    return any(CHECKPOINT_WORDS.search(TAR_PROGRESS.sub("", c)) for c in script.commands)
