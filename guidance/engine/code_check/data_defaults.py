"""Where a program reads its data when the command line does not say: the defaults of its data
options (argparse), and the data folders it names outright (a `root=`, a constant, a dataclass
field). A path is read as the program builds it (`Path(...) / "x"`, `os.path.join`, an f-string
with a literal start, an environment variable's fallback) and through the names it is built
from, a `config.py` module's constants included.

The script checker asks this of the program behind a `python train.py` that gives no data path:
the path the program falls back on is then judged like one on the command line.
"""

import ast
import functools
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
    # The environment variable the path is the fallback of (os.environ.get("DATA_DIR", ...)):
    # a job that sets it gives the program another path.
    variable: str = ""


def data_defaults(programs: tuple[Program, ...]) -> list[DataDefault]:
    """Every data path the program's files fall back on, in file order."""
    found: list[DataDefault] = []
    for program in programs:
        found += _options(program, programs) + _named(program, programs)
    return found + config_data_paths(programs)


def _options(program: Program, programs: tuple[Program, ...] = ()) -> list[DataDefault]:
    found = []
    for call in program.calls_by_attr.get("add_argument", ()):
        flags = tuple(
            a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
        )
        default = next((k.value for k in call.keywords if k.arg == "default"), None)
        paths = _Paths(program, programs)
        path = paths.of(default)
        names = " ".join(flags)
        if path and DATA_NAME.search(names) and not NOT_DATA.search(names):
            found.append(DataDefault(program.name, call.lineno, flags, path, paths.variable))
    return found


def _named(program: Program, programs: tuple[Program, ...] = ()) -> list[DataDefault]:
    found = []
    paths = _Paths(program, programs)
    for node in _assignments(program):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if not any(DATA_NAME.search(n) and not NOT_DATA.search(n) for n in names):
            continue
        if path := paths.of(_field_default(node.value)):
            found.append(DataDefault(program.name, node.lineno, (), path, paths.variable))
    for keyword in program.by_type[ast.keyword]:
        if keyword.arg in DATA_KEYWORDS and (path := paths.of(keyword.value)):
            found.append(DataDefault(program.name, keyword.value.lineno, (), path, paths.variable))
    return found


def _assignments(program: Program) -> list[ast.Assign | ast.AnnAssign]:
    """`name = ...` and `name: str = ...` (a dataclass field, an annotated constant)."""
    annotated = [n for n in program.by_type[ast.AnnAssign] if n.value is not None]
    return sorted([*program.by_type[ast.Assign], *annotated], key=lambda n: n.lineno)


def _field_default(node: ast.AST | None) -> ast.AST | None:
    """A dataclass field's default: `= field(default="/project/...")` as well as `= "..."`."""
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
        name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
        if name == "field":
            return next((k.value for k in node.keywords if k.arg == "default"), None)
    return node


class _Paths:
    """A path as the program builds it, followed through names assigned once, in this file or
    in a module of the program it imports them from (`from config import DATA_ROOT`)."""

    DEPTH = 8

    def __init__(self, program: Program, programs: tuple[Program, ...]):
        self.program, self.programs = program, programs
        self.variable = ""  # of the last path read: the variable it is the fallback of

    def of(self, node: ast.AST | None) -> str | None:
        self.variable = ""
        path = self._built(self.program, node, self.DEPTH)
        return path if path and PATH.match(path) else None

    def _built(self, program: Program, node: ast.AST | None, depth: int) -> str | None:
        if node is None or depth <= 0:
            return None
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, str) else None
        if isinstance(node, ast.JoinedStr):
            return _fstring(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left = self._built(program, node.left, depth - 1)
            right = self._built(program, node.right, depth - 1)
            return _joined(left, right) if left and right else None
        if isinstance(node, ast.Call):
            return self._called(program, node, depth)
        if isinstance(node, (ast.Name, ast.Attribute)):
            found = self._assigned(program, node)
            if found is not None:
                return self._built(found[0], found[1], depth - 1)
        return None

    def _called(self, program: Program, call: ast.Call, depth: int) -> str | None:
        qualname = program.qualname(call.func) or ""
        last = qualname.rsplit(".", 1)[-1]
        args = [a for a in call.args if not isinstance(a, ast.Starred)]
        if len(args) != len(call.args):
            return None
        if qualname in ("os.path.join", "posixpath.join") or last in PATH_CLASSES:
            parts = [self._built(program, a, depth - 1) for a in args]
            if not parts or None in parts:
                return None
            return functools.reduce(_joined, parts)  # type: ignore[arg-type]
        if qualname in ("os.environ.get", "os.getenv") and len(args) == 2:
            name = args[0]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                self.variable = name.value
            return self._built(program, args[1], depth - 1)  # the fallback
        if last in ("str", "expanduser", "resolve", "absolute") and len(args) <= 1:
            inner = args[0] if args else getattr(call.func, "value", None)
            return self._built(program, inner, depth - 1)
        return None

    def _assigned(self, program: Program, node: ast.AST) -> tuple[Program, ast.AST] | None:
        """The one value a name is assigned in its file, or in the module it is imported from;
        `config.DATA_ROOT` for `import config`."""
        if isinstance(node, ast.Name):
            value = _once(program, node.id)
            if value is not None:
                return program, value
        qualname = program.qualname(node) or ""
        module, _, name = qualname.rpartition(".")
        source = self._module(module)
        if source is None or not name:
            return None
        value = _once(source, name)
        return (source, value) if value is not None else None

    def _module(self, dotted: str) -> Program | None:
        """The program's file for an imported module: `config`, `.config`, `pkg.config`."""
        path = dotted.lstrip(".").replace(".", "/")
        if not path:
            return None
        for program in self.programs:
            if program.name == f"{path}.py" or program.name.endswith(f"/{path}.py"):
                return program
        return None


# Calls that make a path of their arguments, joined: Path("/project/x", "data").
PATH_CLASSES = frozenset({"Path", "PosixPath", "PurePath", "PurePosixPath"})


def _once(program: Program, name: str) -> ast.AST | None:
    """The module-level value of a name assigned exactly once in the file."""
    values = [
        node.value
        for node in [*program.tree.body]
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        and node.value is not None
        and name in _target_names(node)
    ]
    return values[0] if len(values) == 1 else None


def _target_names(node: ast.Assign | ast.AnnAssign) -> set[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return {t.id for t in targets if isinstance(t, ast.Name)}


def _fstring(node: ast.JoinedStr) -> str | None:
    """An f-string's text with a literal start; what it puts in stays written as {...}."""
    parts = []
    for value in node.values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            parts.append(value.value)
        else:
            parts.append("{...}")
    return "".join(parts) if parts and not parts[0].startswith("{") else None


def _joined(left: str, right: str) -> str:
    if right.startswith("/"):
        return right  # an absolute part replaces what came before, as os.path.join does
    return f"{left.rstrip('/')}/{right}"


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
