"""The program given beside a job script, read once for the script checker's questions
(gpu_spread, resumes, data_defaults). Only Python files that parse count: a program the checker
cannot read settles nothing, and what hangs on it stays a question."""

from guidance.engine.code_check.program import NotPython, Program, parse_program


def readable(files: dict[str, str] | None) -> tuple[Program, ...]:
    """The files that are Python and parse, in the order given; none: nothing to read."""
    programs = []
    for name, text in (files or {}).items():
        if not name.endswith(".py"):
            continue
        try:
            programs.append(parse_program(name, text))
        except NotPython:
            continue
    return tuple(programs)
