"""Check my script: read a pasted sbatch script the way sbatch does and apply a cluster's guidance.

Pure Python like the rest of the engine, and it never raises: whatever the text, the answer is a
`ScriptCheck` with the notes and the #SBATCH options sbatch would read.

What is certain (how sbatch reads #SBATCH lines, Slurm's time formats) follows Slurm exactly.
What a script *does* is guessed from its words, and each guess is written down where it is made:
a note is only raised when the script shows the problem, so a quiet answer is no guarantee.
"""

from guidance.engine.script_check.account import ACCOUNT_PLACEHOLDER
from guidance.engine.script_check.check import MAX_CHARS, ScriptCheck, check_script
from guidance.engine.script_check.findings import Basis, Edit, Finding, Severity
from guidance.engine.script_check.parse import (
    Directive,
    Script,
    gpu_request,
    gres_gpus,
    parse_script,
    parse_time_limit,
    read_count,
)

__all__ = [
    "ACCOUNT_PLACEHOLDER",
    "MAX_CHARS",
    "Basis",
    "Directive",
    "Edit",
    "Finding",
    "Script",
    "ScriptCheck",
    "Severity",
    "check_script",
    "gpu_request",
    "gres_gpus",
    "parse_script",
    "parse_time_limit",
    "read_count",
]
