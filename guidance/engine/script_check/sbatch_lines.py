"""What sbatch itself refuses or gets wrong in a script: options it does not take, options without
their value, array variables in a job that is no array, and a script that runs nothing."""

import re

from guidance.engine import sources
from guidance.engine.script_check.findings import Edit, Finding, Severity, swap_word
from guidance.engine.script_check.parse import Refused, Script
from guidance.engine.script_check.sbatch_options import OPTIONS, closest

# An option run together with its value: --mem4G, --mem-4G, --time-2:00:00.
GLUED = re.compile(r"(?P<name>[a-z-]+?)-?(?P<value>\d\S*)")
# Abbreviations several options start with, where one of them is what people mean: the usual
# one (--cpus: per task), or the one the value shows (an address is for --mail-user).
AMBIGUOUS_MEANT = {
    "cpus": lambda value: "cpus-per-task",
    "cpus-per": lambda value: "cpus-per-task",
    "mail": lambda value: "mail-user" if "@" in value else None,
}

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
    """The option and value the user most likely meant, as sbatch takes them (--mem=4G), where
    that is clear; never guessed from a single letter."""
    if refused.code != "unknown_option" or not refused.written.startswith("--"):
        return None
    name, eq, value = refused.written.removeprefix("--").partition("=")
    if len(name) < 2:
        return None
    if not eq and (glued := GLUED.fullmatch(name)) and glued["name"] in OPTIONS:
        return f"--{glued['name']}={glued['value']}"
    if refused.meant and len(refused.meant) > 1:  # ambiguous: the usual one, or a near miss
        meaning = AMBIGUOUS_MEANT.get(name)
        option = meaning(value) if meaning else closest(name, refused.meant)
    else:
        option = closest(name)
    if option is None:
        return None
    return f"--{option}" + (f"={value}" if eq else "")


def _fix_text(refused: Refused) -> str:
    if refused.code == "missing_value":
        if " " in refused.written:
            return f"Write it without the space: {refused.written.replace(' ', '')}."
        return "Give the option its value, or remove the line."
    if meant := _meant(refused):
        return f"Write {meant}."
    if "ambiguous" in refused.why:
        return "Write the option's full name."
    return "Remove it, or write the option sbatch's manual gives (man sbatch)."


def _fix_edit(script: Script, refused: Refused) -> tuple[Edit, ...]:
    line = script.line(refused.line)
    if refused.code == "missing_value" and " " in refused.written:
        new = refused.written.replace(" ", "")
    elif meant := _meant(refused):
        new = meant
    else:
        return ()
    # "--mem= 4G" is two words on the line: the space may be several, or a tab.
    old = refused.written
    if old not in line and " " in old:
        spaced = re.search(re.escape(old).replace(r"\ ", r"\s+"), line)
        old = spaced.group() if spaced else old
    edit = swap_word(script, refused.line, old, new)
    return (edit,) if edit.text != line else ()


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
