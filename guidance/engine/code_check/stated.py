"""Worker counts a program states without a literal at the loader: read from the job
(`int(os.environ["SLURM_CPUS_PER_TASK"])`, `len(os.sched_getaffinity(0))`, as the script
checker recommends), or a default written elsewhere that the value falls back to (an argparse
option's, a module constant's, a dataclass field's, a keyword parameter's).

Values cannot tell these apart from any unknown value; the DataLoader rules ask here before
they ask the user. Only what the files say is followed: a default that a call in the files may
replace is left unknown."""

import ast
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property

from guidance.engine.code_check import hydra
from guidance.engine.code_check.program import FUNCTIONS, Program
from guidance.engine.code_check.values import Values

# The job's CPUs for one task (or per GPU), as Slurm sets them for the job's processes.
JOB_CPUS = frozenset({"SLURM_CPUS_PER_TASK", "SLURM_CPUS_PER_GPU"})
_ENVIRON = "os.environ"
_GETENV = frozenset({"os.getenv", "os.environ.get"})
_AFFINITY = "os.sched_getaffinity"
_DEPTH = 8


class How(StrEnum):
    JOB = "job"  # read from the job (or from where the process may run): nothing to say
    TEXT = "text"  # an environment variable as read: a string, which the DataLoader refuses
    DEFAULT = "default"  # a number written as a default or constant elsewhere


@dataclass(frozen=True)
class Stated:
    how: How
    program: Program  # the file where it is written
    node: ast.AST  # the environment read (TEXT), the default's keyword or expression
    value: object = None  # DEFAULT: the number
    where: str = ""  # DEFAULT: what the default belongs to, e.g. "the option `--workers`"
    key: str = ""  # DEFAULT from a config: its dotted key (`data.num_workers`)


class Statements:
    """Where a worker count comes from, followed across the project's files."""

    def __init__(
        self,
        programs: list[Program],
        values: dict[str, Values],
        composed: hydra.Composed | None = None,
    ):
        self.programs, self.values, self.composed = programs, values, composed

    def of(self, program: Program, expr: ast.AST) -> Stated | None:
        """What `expr` (an argument of a loader in `program`) is, where the files say it
        without a literal there; None where they do not."""
        return self._follow(program, expr, _DEPTH)

    def _follow(self, program: Program, expr: ast.AST, depth: int) -> Stated | None:
        if depth <= 0 or expr is None:
            return None
        if _from_job(program, expr):
            return Stated(How.JOB, program, expr)
        if _reads_environment(program, expr):
            return Stated(How.TEXT, program, expr)
        values = self.values[program.name]
        if isinstance(expr, ast.Name):
            assigned = values.single_assignment(expr)
            if assigned is not None:
                constant = _number(assigned)
                if constant is not None:
                    where = f"the name `{expr.id}`"
                    return Stated(How.DEFAULT, program, assigned, constant, where)
                return self._follow(program, assigned, depth - 1)
            return self._parameter(program, expr, depth)
        if isinstance(expr, ast.Attribute) and _hyperparameter(program, expr):
            return self._hyperparameter(program, expr, depth)
        if isinstance(expr, ast.Attribute):
            own = self._attributes(program, expr, depth)
            if own:  # self.workers, set in its class: that is where it comes from
                return own[0]
            made = _made_by(values, expr.value)
            if made != "parse_args" and made not in self._dataclasses:
                made = None  # made by a function of the program's own: not followed
            found = [
                *(self._options(expr.attr, depth) if made in (None, "parse_args") else []),
                *(self._fields(expr.attr, depth, made) if made != "parse_args" else []),
            ]
            return found[0] if len(found) == 1 else None
        return None

    def _default_value(self, program: Program, expr: ast.AST, depth: int, where: str):
        """A default: a number written there, or what the name or read there says."""
        number = _number(expr)
        if number is not None:
            return Stated(How.DEFAULT, program, expr, number, where)
        return self._follow(program, expr, depth - 1)

    # --- args.workers: an argparse option's default -----------------------------------

    def _options(self, dest: str, depth: int) -> list[Stated | None]:
        """`add_argument("--workers", type=int, default=8)` for `args.workers`, in any file."""
        found = []
        for program in self.programs:
            for call in program.calls_by_attr.get("add_argument", ()):
                if not isinstance(call.func, ast.Attribute) or _dest(call) != dest:
                    continue
                keywords = {k.arg: k for k in call.keywords if k.arg}
                default = keywords.get("default")
                if default is None or "required" in keywords:
                    found.append(None)
                    continue
                typed = "type" in keywords and program.segment(keywords["type"].value) == "int"
                if typed and _reads_environment(program, default.value):
                    # argparse applies `type` to a string default: int(os.environ[...]).
                    job = _reads_job(program, default.value)
                    found.append(Stated(How.JOB, program, default.value) if job else None)
                    continue
                option = _option_name(call) or dest
                number = _number(default.value)
                if number is not None:
                    where = f"the option `{option}`"
                    found.append(Stated(How.DEFAULT, program, default, number, where))
                else:
                    found.append(self._follow(program, default.value, depth - 1))
        return found

    # --- cfg.workers: a dataclass field's default -------------------------------------

    @cached_property
    def _dataclass_list(self) -> list[tuple[Program, ast.ClassDef]]:
        return [
            (program, cls)
            for program in self.programs
            for cls in program.by_type[ast.ClassDef]
            if _is_dataclass(program, cls)
        ]

    @cached_property
    def _dataclasses(self) -> frozenset[str]:
        return frozenset(cls.name for _, cls in self._dataclass_list)

    def _fields(self, name: str, depth: int, made: str | None) -> list[Stated | None]:
        """`workers: int = 8` in a dataclass: of the class the receiver is made from, where
        the files say it, else of any."""
        found = []
        for program, cls in self._dataclass_list:
            if made not in (None, cls.name):
                continue
            for statement in cls.body:
                if not (
                    isinstance(statement, ast.AnnAssign)
                    and isinstance(statement.target, ast.Name)
                    and statement.target.id == name
                ):
                    continue
                default = _field_default(program, statement.value)
                where = f"the field `{cls.name}.{name}`"
                if default is None:
                    found.append(None)
                else:
                    found.append(self._default_value(program, default, depth, where))
        return found

    # --- self.workers: set once in the class, from a parameter with a default ---------

    def _attributes(self, program: Program, expr: ast.Attribute, depth: int):
        if not (isinstance(expr.value, ast.Name) and expr.value.id == "self"):
            return []
        cls = next((a for a in program.ancestors(expr) if isinstance(a, ast.ClassDef)), None)
        if cls is None:
            return []
        sets = [
            (statement, target)
            for statement, target in program.attribute_assignments.get(expr.attr, ())
            if isinstance(target.value, ast.Name)
            and target.value.id == "self"
            and cls in program.ancestors(statement)
        ]
        if len(sets) != 1:
            return [None] if sets else []
        return [self._follow(program, sets[0][0].value, depth - 1)]

    # --- self.hparams.workers: the constructor's parameter, saved by Lightning -------------

    def _hyperparameter(self, program: Program, expr: ast.Attribute, depth: int):
        """`self.hparams.workers` in a class whose __init__ calls save_hyperparameters(): the
        parameter `workers` of that __init__."""
        cls = next((a for a in program.ancestors(expr) if isinstance(a, ast.ClassDef)), None)
        init = (
            next(
                (s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"),
                None,
            )
            if cls is not None
            else None
        )
        if init is None or not _saves_hyperparameters(init):
            return None
        return self._default_of(program, init, expr.attr, depth)

    # --- a parameter's default ----------------------------------------------------------

    def _parameter(self, program: Program, name: ast.Name, depth: int) -> Stated | None:
        """`def make(ds, workers=8)`: the default, where every call in the files leaves the
        parameter out (a number), or where none passes it (read from the job)."""
        function = program.function_of(name)
        if not isinstance(function, FUNCTIONS) or isinstance(function, ast.Lambda):
            return None
        found = self.values[program.name].assignments(name.id, name)
        if found is None or found[0] is not function or len(found[1]) != 1:
            return None
        return self._default_of(program, function, name.id, depth)

    def _default_of(self, program: Program, function, name: str, depth: int) -> Stated | None:
        cls, given = program.parents.get(function), None
        if isinstance(cls, ast.ClassDef) and function.name == "__init__":
            given = hydra.constructed(self.composed, self.programs, program, cls)
            if given is not None and name in given:
                return _from_config(self.composed, given[name])
        position, default = _default(function.args, name)
        if default is None:
            return None
        stated = self._default_value(program, default, depth, f"the parameter `{name}`")
        if stated is None:
            return None
        if isinstance(cls, ast.ClassDef) and given is not None:
            return stated  # built by Hydra from a config that leaves it out: the default holds
        calls = self._calls(program, function)
        if position is not None and isinstance(cls, ast.ClassDef):
            position -= 1  # Data(8) gives __init__(self, workers) its workers
        if any(_passes(call, name, position) for call in calls):
            return None
        if stated.how is How.DEFAULT and not calls:
            return None  # called from elsewhere (a framework, another program): not known
        return stated

    def _calls(self, program: Program, function: ast.AST) -> list[ast.Call]:
        """The calls in the files to this function, or to its class for an `__init__`."""
        called = function.name
        cls = program.parents.get(function)
        if isinstance(cls, ast.ClassDef):
            if called != "__init__":
                return []  # a method: calls through instances are not followed
            called = cls.name
        return [c for p in self.programs for c in p.calls_by_attr.get(called, ())]


def _hyperparameter(program: Program, expr: ast.Attribute) -> bool:
    """`self.hparams.name` (Lightning keeps the constructor's arguments there)."""
    inner = expr.value
    return (
        isinstance(inner, ast.Attribute)
        and inner.attr == "hparams"
        and isinstance(inner.value, ast.Name)
        and inner.value.id == "self"
    )


def _saves_hyperparameters(init: ast.FunctionDef) -> bool:
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "save_hyperparameters"
        for node in ast.walk(init)
    )


def _from_config(composed: hydra.Composed, setting: hydra.Setting) -> Stated | None:
    """The value a config gives the constructor: a number written in a YAML file, where it
    is followed to one; None where it is not (the command line's, an interpolation left open)."""
    known = composed.value(setting.path)
    if setting.file is None or known is None or len(known.through) != 1:
        return None
    if type(known.value) not in (int, float):
        return None
    where = f"`{setting.path}` ({setting.file.name})"
    return Stated(How.DEFAULT, setting.file, setting.spot, known.value, where, setting.path)


def _made_by(values: Values, receiver: ast.AST) -> str | None:
    """What made `args` in `args.workers`, where a name is assigned once from a call: the
    call's last name (`parse_args`, a class's name); None where the files do not say."""
    if not isinstance(receiver, ast.Name):
        return None
    assigned = values.single_assignment(receiver)
    if not isinstance(assigned, ast.Call):
        return None
    func = assigned.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _number(expr: ast.AST) -> int | float | None:
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        inner = _number(expr.operand)
        return -inner if inner is not None else None
    if isinstance(expr, ast.Constant) and type(expr.value) in (int, float):
        return expr.value
    return None


def _environment_read(program: Program, expr: ast.AST) -> str | None:
    """The variable's name (or "" where it is computed) of `os.environ[...]`,
    `os.environ.get(...)` or `os.getenv(...)`; None for anything else."""
    if isinstance(expr, ast.Subscript) and program.qualname(expr.value) == _ENVIRON:
        key = expr.slice
    elif (
        isinstance(expr, ast.Call)
        and program.qualname(expr.func) in _GETENV
        and expr.args
        and not isinstance(expr.args[0], ast.Starred)
    ):
        key = expr.args[0]
    else:
        return None
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else ""


def _reads_environment(program: Program, expr: ast.AST) -> bool:
    return _environment_read(program, expr) is not None


def _reads_job(program: Program, expr: ast.AST) -> bool:
    """An environment read of the job's CPUs whose fallback, if any, is not 0 or less."""
    if _environment_read(program, expr) not in JOB_CPUS:
        return False
    fallback = expr.args[1] if isinstance(expr, ast.Call) and len(expr.args) > 1 else None
    number = _number(fallback) if fallback is not None else None
    return number is None or number > 0


def _from_job(program: Program, expr: ast.AST) -> bool:
    """`int(<the job's CPUs>)` or `len(os.sched_getaffinity(...))`."""
    if not (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and len(expr.args) == 1
        and not expr.keywords
    ):
        return False
    inner = expr.args[0]
    if expr.func.id == "int":
        return _reads_job(program, inner)
    return (
        expr.func.id == "len"
        and isinstance(inner, ast.Call)
        and program.qualname(inner.func) == _AFFINITY
    )


def _dest(call: ast.Call) -> str | None:
    """The attribute argparse stores an option in: `dest=`, else the first long option's
    name (dashes made underscores), else the first short one's."""
    for keyword in call.keywords:
        if keyword.arg == "dest":
            value = keyword.value
            return value.value if isinstance(value, ast.Constant) else None
    flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if not flags:
        return None
    long = [f for f in flags if f.startswith("--")]
    chosen = long[0] if long else flags[0]
    return chosen.lstrip("-").replace("-", "_") or None


def _option_name(call: ast.Call) -> str | None:
    flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    long = [f for f in flags if f.startswith("--")]
    return (long or flags or [None])[0]


def _is_dataclass(program: Program, cls: ast.ClassDef) -> bool:
    for decorator in cls.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (program.qualname(target) or "").rsplit(".", 1)[-1] == "dataclass":
            return True
    return False


def _field_default(program: Program, value: ast.AST | None) -> ast.AST | None:
    """A field's default: `= 8`, `= field(default=8)`, `= field(default_factory=lambda: 8)`."""
    if value is None:
        return None
    if not (isinstance(value, ast.Call) and (program.qualname(value.func) or "").endswith("field")):
        return value
    for keyword in value.keywords:
        if keyword.arg == "default":
            return keyword.value
        if keyword.arg == "default_factory" and isinstance(keyword.value, ast.Lambda):
            return keyword.value.body
    return None


def _default(arguments: ast.arguments, name: str) -> tuple[int | None, ast.AST | None]:
    """A parameter's position (None for a keyword-only one) and its default."""
    positional = [*arguments.posonlyargs, *arguments.args]
    offset = len(positional) - len(arguments.defaults)
    for index, arg in enumerate(positional):
        if arg.arg == name:
            default = arguments.defaults[index - offset] if index >= offset else None
            return index, default
    for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        if arg.arg == name:
            return None, default
    return None, None


def _passes(call: ast.Call, name: str, position: int | None) -> bool:
    """The call gives the parameter (by name or at its position), or may (* or **)."""
    if any(k.arg in (name, None) for k in call.keywords):
        return True
    if any(isinstance(a, ast.Starred) for a in call.args):
        return True
    return position is not None and len(call.args) > position
