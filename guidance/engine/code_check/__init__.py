"""Check my training code: the DGX guidance (003) applied to a PyTorch program, line by line.

Pure Python like the rest of the engine. It reads the code with Python's own parser and never
runs or imports it; a value the code does not fix (a command-line argument, a config file) is
asked about, never claimed. It never raises: unreadable files are said in `CodeCheck.unreadable`.
"""

from guidance.engine.code_check.check import MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES, check_code
from guidance.engine.code_check.findings import (
    CodeCheck,
    CodeFinding,
    Impact,
    Kind,
    Measured,
    Unreadable,
)

__all__ = [
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "MAX_TOTAL_BYTES",
    "CodeCheck",
    "CodeFinding",
    "Impact",
    "Kind",
    "Measured",
    "Unreadable",
    "check_code",
]
