"""The checks in order: first whether sbatch takes the text as a batch script at all, then
each subject's rules. Findings come worst first, then in the order of the script's lines."""

from dataclasses import dataclass, replace

from guidance.engine import sources
from guidance.engine.code_check.beside_script import readable
from guidance.engine.script_check.account import check_account
from guidance.engine.script_check.commands import read_commands
from guidance.engine.script_check.environment import check_environment
from guidance.engine.script_check.findings import (
    Edit,
    Finding,
    Severity,
    add_directive,
    apply_edits,
    unified_diff,
)
from guidance.engine.script_check.gpu_use import check_gpu_requested, check_gpu_use
from guidance.engine.script_check.held_gpus import check_held_gpus
from guidance.engine.script_check.node_limits import check_node_limits
from guidance.engine.script_check.parse import Directive, Script, parse_script
from guidance.engine.script_check.paths import storage_places
from guidance.engine.script_check.request import read_request
from guidance.engine.script_check.sbatch_lines import (
    check_array_variables,
    check_has_commands,
    check_refused,
)
from guidance.engine.script_check.shares import check_shares
from guidance.engine.script_check.time_limits import check_checkpoints, check_resume, check_time
from guidance.engine.script_check.training_data import check_program_data, check_training_data
from guidance.engine.types import Cluster, Scheduler

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


def check_script(
    text: str, cluster: Cluster, account: str = "", program: dict[str, str] | None = None
) -> ScriptCheck:
    """The cluster's guidance applied to an sbatch script; never raises. `account`: the user's
    Slurm account there, where known, for the fixed script. `program`: the files of the program
    the script starts, by name, where the user gave them: what hangs on the program is then read
    from it, else asked as a question."""
    if cluster.scheduler != Scheduler.SLURM:
        return ScriptCheck(
            (
                Finding(
                    "not_slurm",
                    f"{cluster.name} runs {cluster.scheduler.label}, not Slurm: it takes no "
                    "sbatch scripts.",
                    sources.RUNAI if cluster.scheduler == Scheduler.RUNAI else None,
                    severity=Severity.FAILS,
                    fix="Submit the work through its own tools; the guidance pages still apply.",
                ),
            )
        )
    text = text if isinstance(text, str) else ""
    truncated = len(text) > MAX_CHARS
    text = text[:MAX_CHARS]
    script = parse_script(text)
    notes: list[Finding] = []
    if truncated:
        notes.append(
            Finding(
                "truncated",
                f"The script is longer than {MAX_CHARS // 1000} kB: only its first "
                f"{MAX_CHARS // 1000} kB were checked.",
                severity=Severity.ADVICE,
            )
        )
    if not _check_shape(text, script, notes):
        return _finished(text, notes, script, truncated)
    places = storage_places(cluster)
    reading = read_commands(script, places)
    beside = readable(program)
    request = read_request(script)
    check_refused(script, notes)
    check_has_commands(script, notes)
    # A program that uses one GPU gets one in the fixed script, and its share with it.
    gpu_use: list[Finding] = []
    one_gpu = check_gpu_use(script, request, reading, gpu_use, beside)
    if script.directives:
        minutes = check_time(script, cluster, notes)
        check_checkpoints(script, cluster, minutes, notes)
        check_resume(script, cluster, notes, beside)
        check_account(script, cluster, account, notes)
        check_node_limits(script, request, cluster, notes)
        asked = replace(request, gpus_per_node=1) if one_gpu else request
        check_shares(script, asked, cluster, notes, reading, beside)
    check_gpu_requested(script, request, reading, cluster, notes)
    notes += gpu_use
    check_training_data(cluster, reading, notes)
    check_program_data(cluster, reading, places, beside, notes)
    check_environment(script, cluster, places, notes)
    check_held_gpus(script, request, reading, cluster, notes)
    check_array_variables(script, notes)
    return _finished(text, notes, script, truncated)


def _finished(text: str, notes: list[Finding], script: Script, truncated: bool) -> ScriptCheck:
    findings = tuple(
        sorted(
            notes,
            key=lambda f: (f.severity.rank, f.lines[:1] or (0,)),
        )
    )
    # The fixed script has Unix line breaks whatever was pasted (the dos_line_breaks finding).
    unix = text.replace("\r\n", "\n")
    fixed = apply_edits(unix, findings)
    if fixed is None and unix != text:
        fixed = unix
    diff = unified_diff(text, fixed) if fixed is not None else ""
    return ScriptCheck(findings, script.directives, truncated, fixed if diff else None, diff)


def _check_shape(text: str, script: Script, notes: list[Finding]) -> bool:
    """Whether sbatch would take the text as a batch script at all; False: nothing else to say."""
    if "\x00" in text:
        notes.append(
            Finding(
                "not_a_batch_script",
                "This looks like a binary file, not a job script: it contains NUL bytes, and "
                "sbatch refuses those.",
                sources.SBATCH_SCRIPT_RULES,
                severity=Severity.FAILS,
                fix="Paste the job script itself, as plain text.",
            )
        )
        return False
    if not script.shebang and not script.directives:
        notes.append(
            Finding(
                "not_a_batch_script",
                "This does not look like a batch script: it has neither a first line starting "
                "with #! (e.g. #!/bin/bash) nor any #SBATCH line.",
                sources.SBATCH_SCRIPT_RULES,
                severity=Severity.FAILS,
                fix="Start it with #!/bin/bash and the #SBATCH lines of the resources it needs.",
            )
        )
        return False
    if not script.shebang:
        notes.append(
            Finding(
                "not_a_batch_script",
                "The first line must start with #! and the shell to run, e.g. #!/bin/bash: "
                "sbatch refuses the script otherwise.",
                sources.SBATCH_SCRIPT_RULES,
                severity=Severity.FAILS,
                lines=(1,),
                fix="Make #!/bin/bash the first line.",
                edits=(Edit(1, "#!/bin/bash", insert=True),),
            )
        )
    if not script.directives:
        notes.append(
            Finding(
                "not_a_batch_script",
                "No #SBATCH line: the job gets the cluster's defaults for time, memory and "
                "GPUs (none).",
                sources.SBATCH_ELEMENTS,
                severity=Severity.ADVICE,
                fix="If you pass the options on the sbatch command line, write them as #SBATCH "
                "lines at the top of the script to have them checked here.",
            )
        )
    if "\r\n" in text:
        notes.append(
            Finding(
                "dos_line_breaks",
                "The script has Windows (DOS) line breaks, which sbatch refuses.",
                sources.SBATCH_SCRIPT_RULES,
                severity=Severity.FAILS,
                fix="Convert it with dos2unix before submitting; the fixed script has Unix line "
                "breaks.",
            )
        )
    for number, line, why in script.ignored:
        notes.append(
            Finding(
                "ignored_directive",
                f"Line {number}: sbatch ignores \u201c{line[:80]}\u201d because {why}.",
                sources.SBATCH_SCRIPT_RULES,
                severity=Severity.FAILS,
                lines=(number,),
                fix="Put every #SBATCH line at the very start of a line, above the first "
                "command (the fixed script moves it there).",
                edits=(
                    Edit(number, None),
                    add_directive(script, line.removeprefix("#SBATCH").strip()),
                ),
            )
        )
    return True
