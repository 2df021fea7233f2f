"""What sbatch itself refuses or gets wrong in a script: options it does not take, options without
their value, array variables in a job that is no array, and a script that runs nothing."""

import re

from guidance.engine import sources
from guidance.engine.script_check.findings import Edit, Finding, Severity
from guidance.engine.script_check.parse import Refused, Script
from guidance.engine.script_check.sbatch_options import closest

ARRAY_VARIABLE = re.compile(r"\$\{?SLURM_ARRAY_(TASK|JOB)_(ID|COUNT|MIN|MAX)\b")


def check_refused(script: Script, notes: list) -> None:
    for refused in script.refused:
        notes.append(
            Finding(
                refused.code,
                f"Line {refused.line}: {refused.why}. sbatch refuses the whole script with "
                "such a line.",
                sources.SBATCH_OPTIONS,
                severity=Severity.FAILS,
                lines=(refused.line,),
                fix=_fix_text(refused),
                edits=_fix_edit(script, refused),
            )
        )


def _meant(refused: Refused) -> str | None:
    """The option the user most likely meant, where that is clear."""
    name = refused.written.removeprefix("--").partition("=")[0]
    if refused.code == "unknown_option" and refused.written.startswith("--"):
        return closest(name)
    return None


def _fix_text(refused: Refused) -> str:
    if refused.code == "missing_value":
        if " " in refused.written:
            return f"Write it without the space: {refused.written.replace(' ', '')}."
        return "Give the option its value, or remove the line."
    if meant := _meant(refused):
        return f"Write --{meant}."
    if "ambiguous" in refused.why:
        return "Write the option's full name."
    return "Remove it, or write the option sbatch's manual gives (man sbatch)."


def _fix_edit(script: Script, refused: Refused) -> tuple[Edit, ...]:
    written = script.line(refused.line)
    if refused.code == "missing_value" and " " in refused.written:
        new = written.replace(refused.written, refused.written.replace(" ", ""), 1)
    elif meant := _meant(refused):
        name = refused.written.partition("=")[0]
        new = written.replace(name, f"--{meant}", 1)
    else:
        return ()
    return (Edit(refused.line, new),) if new != written else ()


def check_array_variables(script: Script, notes: list) -> None:
    if script.has("array"):
        return
    lines = tuple(n for n, line in script.numbered_commands() if ARRAY_VARIABLE.search(line))
    if not lines:
        return
    notes.append(
        Finding(
            "array_task_id_without_array",
            "The script uses $SLURM_ARRAY_TASK_ID, but it asks for no --array: Slurm sets that "
            "variable only in an array's jobs, so here it is empty, and whatever depends on it "
            "(a configuration, a seed, a data shard) is missing.",
            sources.SBATCH_ARRAY,
            severity=Severity.FAILS,
            lines=lines,
            fix="Add #SBATCH --array=1-N with the number of tasks (e.g. --array=1-10), or set "
            "the value in the script.",
        )
    )


def check_has_commands(script: Script, notes: list) -> None:
    if script.commands or not script.directives:
        return
    notes.append(
        Finding(
            "no_commands",
            "The script has #SBATCH lines but no command: the job would start, hold its GPUs "
            "and end at once, having done nothing.",
            sources.SBATCH_ELEMENTS,
            severity=Severity.FAILS,
            fix="Add the commands that prepare the environment, copy the data and start the "
            "program, below the #SBATCH lines.",
        )
    )
