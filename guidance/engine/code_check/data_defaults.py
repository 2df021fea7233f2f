"""Where a program reads its data when the command line does not say: the defaults of its data
options (argparse), and the data folders it names outright (a `root=`, a constant).

The script checker asks this of the program behind a `python train.py` that gives no data path:
the path the program falls back on is then judged like one on the command line.
"""

import ast
import re
from dataclasses import dataclass

from guidance.engine.code_check import hydra
from guidance.engine.code_check.beside_script import configs_of
from guidance.engine.code_check.program import Program

# Option and constant names that hold a data folder, and keywords handing one to a dataset.
DATA_NAME = re.compile(r"data|dataset|root|corpus|images|train_dir|input_dir", re.IGNORECASE)
NOT_DATA = re.compile(r"out|save|log|checkpoint|ckpt|result|cache|model|weight", re.IGNORECASE)
DATA_KEYWORDS = frozenset({"root", "data_dir", "data_root", "data_path", "dataset_path"})
# A path a job could read: absolute, in a home folder, or from a storage variable.
PATH = re.compile(r"^(/|~|\$)")


@dataclass(frozen=True)
class DataDefault:
    """A data path the program falls back on: its file and line, the command-line options that
    would override it (none for a path it names outright), and the path."""

    file: str
    line: int
    options: tuple[str, ...]
    path: str


def data_defaults(programs: tuple[Program, ...]) -> list[DataDefault]:
    """Every data path the program's files fall back on, in file order."""
    found: list[DataDefault] = []
    for program in programs:
        found += _options(program) + _named(program)
    return found + config_data_paths(programs)


def _options(program: Program) -> list[DataDefault]:
    found = []
    for call in program.calls_by_attr.get("add_argument", ()):
        flags = tuple(
            a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
        )
        default = next((k.value for k in call.keywords if k.arg == "default"), None)
        path = _path(default)
        names = " ".join(flags)
        if path and DATA_NAME.search(names) and not NOT_DATA.search(names):
            found.append(DataDefault(program.name, call.lineno, flags, path))
    return found


def _named(program: Program) -> list[DataDefault]:
    found = []
    for node in program.by_type[ast.Assign]:
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        path = _path(node.value)
        if path and any(DATA_NAME.search(n) and not NOT_DATA.search(n) for n in names):
            found.append(DataDefault(program.name, node.lineno, (), path))
    for keyword in program.by_type[ast.keyword]:
        if keyword.arg in DATA_KEYWORDS and (path := _path(keyword.value)):
            found.append(DataDefault(program.name, keyword.value.lineno, (), path))
    return found


def _path(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value if PATH.match(node.value) else None
    return None


# --- Hydra configs ------------------------------------------------------------------------


def config_data_paths(programs: tuple[Program, ...]) -> list[DataDefault]:
    """Data folders in the YAML configs a Hydra program builds its parts from: a data key
    (`data_dir: /project/...`, `${paths.data_dir}` followed) of a mapping the program
    instantiates. Its options are the keys a command-line override of it would name (the key
    itself and each key its value was read through), the key itself last."""
    composed = hydra.compose(programs, configs_of(programs))
    if composed is None:
        return []
    builds = hydra.instantiated(programs, composed)
    # What a call passes itself replaces the config's; a `**kw` may replace any of it.
    passed: dict[str, set[str | None]] = {}
    for _, call, path in builds:
        passed.setdefault(path, set()).update(k.arg for k in call.keywords)
    found = []
    for path, given in passed.items():
        if None in given:
            continue
        for name, setting in composed.under(path).items():
            if setting.file is None or setting.spot is None or name in given:
                continue
            if not (
                name in DATA_KEYWORDS or (DATA_NAME.search(name) and not NOT_DATA.search(name))
            ):
                continue
            known = composed.value(setting.path)
            if known is None or not isinstance(known.value, str) or not PATH.match(known.value):
                continue
            keys = [s.path for s in reversed(known.through)]
            options = tuple(f"{plus}{key}" for key in keys for plus in ("++", "+", ""))
            found.append(DataDefault(setting.file.name, setting.spot.lineno, options, known.value))
    return found
