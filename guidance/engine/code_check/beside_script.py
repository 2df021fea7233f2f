"""The program given beside a job script, read once for the script checker's questions
(gpu_spread, resumes, data_defaults). Only Python files that parse count: a program the checker
cannot read settles nothing, and what hangs on it stays a question. YAML configs that parse come
with them (`configs`), for the values a Hydra program reads from its configs/ folder."""

import contextlib

from guidance.engine.code_check.configs import ConfigFile, NotYaml, is_config, read_config
from guidance.engine.code_check.program import NotPython, Program, parse_program


class ProgramFiles(tuple):
    """The Python files that parse, in the order given (a tuple of Program, as before), and the
    YAML configs given beside them."""

    configs: tuple[ConfigFile, ...]

    def __new__(cls, programs=(), configs=()):
        made = super().__new__(cls, programs)
        made.configs = tuple(configs)
        return made


def readable(files: dict[str, str] | None) -> ProgramFiles:
    """The files that are Python and parse, in the order given, with the YAML configs that
    parse; none: nothing to read."""
    programs, configs = [], []
    for name, text in (files or {}).items():
        if is_config(name):
            with contextlib.suppress(NotYaml):
                configs.append(read_config(name, text))
            continue
        if not name.endswith(".py"):
            continue
        try:
            programs.append(parse_program(name, text))
        except NotPython:
            continue
    return ProgramFiles(programs, configs)


def configs_of(programs: tuple[Program, ...]) -> tuple[ConfigFile, ...]:
    """The YAML configs given with the program; none where the files came without them."""
    return getattr(programs, "configs", ())
