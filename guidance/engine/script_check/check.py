"""The checks in order: first whether sbatch takes the text as a batch script at all."""

from dataclasses import dataclass

from guidance.engine import sources
from guidance.engine.script_check.account_and_gpus import (
    check_account,
    check_gpu_types,
    check_gpu_use,
)
from guidance.engine.script_check.commands import read_commands
from guidance.engine.script_check.findings import Finding, apply_edits, unified_diff
from guidance.engine.script_check.parse import Directive, Script, parse_script
from guidance.engine.script_check.paths import storage_places
from guidance.engine.script_check.time_limits import check_checkpoints, check_time
from guidance.engine.script_check.training_data import check_training_data
from guidance.engine.types import Cluster, Note, Scheduler

# Nobody writes a 200 kB job script; the cap keeps the page fast whatever is pasted.
MAX_CHARS = 200_000


@dataclass(frozen=True)
class ScriptCheck:
    notes: tuple[Finding, ...]
    directives: tuple[Directive, ...] = ()
    truncated: bool = False
    # The script with the findings' mechanical fixes applied (directives, module and pip
    # lines), and the change as a unified diff; None and "" when there is nothing to apply.
    fixed: str | None = None
    diff: str = ""


def check_script(text: str, cluster: Cluster, account: str = "") -> ScriptCheck:
    """The cluster's guidance applied to an sbatch script; never raises. `account`: the user's
    Slurm account there, where known, for the fixed script."""
    if cluster.scheduler != Scheduler.SLURM:
        return ScriptCheck(
            (
                Note(
                    "not_slurm",
                    f"{cluster.name} runs {cluster.scheduler.label}, not Slurm: it takes no "
                    "sbatch scripts. Submit the work through its own tools; the guidance pages "
                    "still apply.",
                    sources.RUNAI if cluster.scheduler == Scheduler.RUNAI else None,
                ),
            )
        )
    text = text if isinstance(text, str) else ""
    truncated = len(text) > MAX_CHARS
    text = text[:MAX_CHARS]
    script = parse_script(text)
    notes: list[Note] = []
    if truncated:
        notes.append(
            Note(
                "truncated",
                f"The script is longer than {MAX_CHARS // 1000} kB: only its first "
                f"{MAX_CHARS // 1000} kB were checked.",
            )
        )
    if not _check_shape(text, script, notes):
        return ScriptCheck(tuple(notes), script.directives, truncated)
    places = storage_places(cluster)
    reading = read_commands(script, places)
    if script.directives:
        minutes = check_time(script, cluster, notes)
        check_checkpoints(script, cluster, minutes, notes)
        check_account(script, cluster, account, notes)
        check_gpu_types(script, cluster, notes)
    check_gpu_use(script, reading, notes)
    check_training_data(cluster, reading, notes)
    return _finished(text, notes, script, truncated)


def _finished(text: str, notes: list[Note], script: Script, truncated: bool) -> ScriptCheck:
    findings = tuple(n if isinstance(n, Finding) else Finding(**vars(n)) for n in notes)
    fixed = apply_edits(text, findings)
    diff = unified_diff(text, fixed) if fixed is not None else ""
    return ScriptCheck(findings, script.directives, truncated, fixed if diff else None, diff)


def _check_shape(text: str, script: Script, notes: list[Note]) -> bool:
    """Whether sbatch would take the text as a batch script at all; False: nothing else to say."""
    if "\x00" in text:
        notes.append(
            Note(
                "not_a_batch_script",
                "This looks like a binary file, not a job script: it contains NUL bytes, and "
                "sbatch refuses those.",
                sources.SBATCH_SCRIPT_RULES,
            )
        )
        return False
    if not script.shebang and not script.directives:
        notes.append(
            Note(
                "not_a_batch_script",
                "This does not look like a batch script: it has neither a first line starting "
                "with #! (e.g. #!/bin/bash) nor any #SBATCH line.",
                sources.SBATCH_SCRIPT_RULES,
            )
        )
        return False
    if not script.shebang:
        notes.append(
            Note(
                "not_a_batch_script",
                "The first line must start with #! and the shell to run, e.g. #!/bin/bash: "
                "sbatch refuses the script otherwise.",
                sources.SBATCH_SCRIPT_RULES,
            )
        )
    if not script.directives:
        notes.append(
            Note(
                "not_a_batch_script",
                "No #SBATCH line: the job gets the cluster's defaults for time, memory and "
                "GPUs (none). If you pass the options on the sbatch command line, write them as "
                "#SBATCH lines at the top of the script to have them checked here.",
                sources.SBATCH_ELEMENTS,
            )
        )
    if "\r\n" in text:
        notes.append(
            Note(
                "dos_line_breaks",
                "The script has Windows (DOS) line breaks, which sbatch refuses: convert it "
                "with dos2unix before submitting.",
                sources.SBATCH_SCRIPT_RULES,
            )
        )
    for number, line, why in script.ignored:
        notes.append(
            Note(
                "ignored_directive",
                f"Line {number}: sbatch ignores \u201c{line[:80]}\u201d because {why}. Put "
                "every #SBATCH line at the very start of a line, above the first command.",
                sources.SBATCH_SCRIPT_RULES,
            )
        )
    return True
