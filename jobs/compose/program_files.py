"""A training program's files as people send them (pasted, uploaded, or in the API's JSON),
checked before the training-code checker reads them: names it can cite as file:line, the
checker's limits, text rather than binary. Every problem names the file it is about, so the
page and the API say the same thing in the same words."""

import io
import re
import tokenize
from collections.abc import Mapping
from dataclasses import dataclass

from guidance.engine.code_check import MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES, CodeCheck
from guidance.engine.code_check.configs import SUFFIXES as CONFIG_SUFFIXES
from guidance.engine.code_check.configs import is_config

DEFAULT_NAME = "train.py"
MAX_NAME_CHARS = 200
# One part of a relative path, as projects name their modules: no "..", no hidden "." files.
_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
EXAMPLE = "e.g. train.py or models/resnet.py"


@dataclass(frozen=True)
class Problem:
    file: str | None  # None: about the files together
    code: str  # stable, for machines (the API's error code)
    message: str
    line: int | None = None


def kb(size: int) -> str:
    return f"{-(-size // 1000):,} kB"


def name_problem(name: str) -> Problem | None:
    """Why the name is not one the checker takes, or None. Names are relative paths inside the
    project: the checker cites them, and resolves `import models.resnet` against them."""
    shown = name if len(name) <= 60 else name[:57] + "..."
    if not name.strip():
        return Problem(name, "bad_file_name", f"A file needs a name ({EXAMPLE}).")
    if len(name) > MAX_NAME_CHARS:
        said = (
            f"“{shown}” is longer than {MAX_NAME_CHARS} characters: name the file as the "
            f"project does ({EXAMPLE})."
        )
        return Problem(name, "bad_file_name", said)
    if name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", name):
        said = f"“{shown}” is an absolute path: name the file as inside the project ({EXAMPLE})."
        return Problem(name, "bad_file_name", said)
    parts = name.split("/")
    if ".." in parts:
        said = f"“{shown}” points outside the project (..): name the file as inside it ({EXAMPLE})."
        return Problem(name, "bad_file_name", said)
    if not name.endswith(".py") and not is_config(name):
        said = (
            f"“{shown}” is not a Python file: the checker reads .py files and the YAML configs "
            f"({', '.join(CONFIG_SUFFIXES)}) beside them ({EXAMPLE})."
        )
        return Problem(name, "not_python_file", said)
    if not all(_PART.fullmatch(part) for part in parts):
        said = (
            f"“{shown}” is not a file name the checker takes: letters, digits, '_', '-' and '.' "
            f"in each part, parts separated by '/' ({EXAMPLE})."
        )
        return Problem(name, "bad_file_name", said)
    return None


def problems(files: Mapping[str, str]) -> list[Problem]:
    """What keeps the files from being checked, before the checker reads them: none, too many,
    bad names, over a size limit, not text."""
    if not files:
        said = "There is nothing to check: paste the program or upload its .py files."
        return [Problem(None, "no_files", said)]
    if all(is_config(name) for name in files):
        said = (
            "Only YAML configs were sent: send the Python files that read them too (the "
            "entry point and the modules it imports)."
        )
        return [Problem(None, "no_files", said)]
    if len(files) > MAX_FILES:
        said = (
            f"{len(files)} files: the checker reads at most {MAX_FILES} at a time. Send the entry "
            "point and the modules it imports from the project."
        )
        return [Problem(None, "too_many_files", said)]
    found = []
    total = 0
    for name, text in files.items():
        if problem := name_problem(name):
            found.append(problem)
            continue
        if problem := _text_problem(name, text):
            found.append(problem)
            continue
        size = len(text.encode("utf-8"))
        total += size
        if size > MAX_FILE_BYTES:
            said = f"{name} is {kb(size)}: the checker reads files of at most {kb(MAX_FILE_BYTES)}."
            found.append(Problem(name, "file_too_large", said))
    if not found and total > MAX_TOTAL_BYTES:
        said = (
            f"The files come to {kb(total)} together: the checker reads at most "
            f"{kb(MAX_TOTAL_BYTES)} at a time. Send the entry point and the modules it imports."
        )
        found.append(Problem(None, "too_large", said))
    return found


def without_bom(files: Mapping[str, str]) -> dict[str, str]:
    """The files with one byte-order mark at the start of each dropped: editors on Windows save
    one, and Python's parser refuses it in text already decoded (U+FEFF, 'non-printable')."""
    return {name: text.removeprefix("\ufeff") for name, text in files.items()}


def decode(name: str, data: bytes) -> str | Problem:
    """An uploaded file's text, read as Python reads a source file: in the encoding its coding
    line names (# -*- coding: latin-1 -*-), else UTF-8, a byte-order mark dropped. A Problem
    when it is not text in that encoding."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):  # a coding line Python refuses too
        return not_text(name)
    return text.removeprefix("\ufeff")


def not_text(name: str) -> Problem:
    said = (
        f"{name} is not a text file: send the program's Python source, saved as plain text "
        "(UTF-8, or the encoding its coding line names)."
    )
    return Problem(name, "not_text", said)


def _text_problem(name: str, text: str) -> Problem | None:
    if "\x00" in text:
        return not_text(name)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, which JSON can carry and no file holds
        return not_text(name)
    return None


def entry_problem(entry: str, files: Mapping[str, str]) -> Problem | None:
    if entry in files and is_config(entry):
        said = f"“{entry}” is a YAML config: the entry point is the Python file that is run."
        return Problem(entry, "entry_not_python", said)
    if not entry or entry in files:
        return None
    names = ", ".join(files)
    said = f"There is no file “{entry}” among those sent ({names}): name one of them."
    return Problem(entry, "unknown_entry", said)


def unreadable(check: CodeCheck) -> list[Problem]:
    """The files the checker could not read, as problems; a syntax error with its line."""
    found = []
    for u in check.unreadable:
        message = u.message if u.file in u.message else f"{u.file}: {u.message}"
        if u.line is not None and str(u.line) not in message:
            message += f" (line {u.line})"
        code = "syntax_error" if u.line is not None else "unreadable"
        found.append(Problem(u.file, code, message, u.line))
    return found
