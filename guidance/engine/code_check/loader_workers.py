"""How many data-loading workers a program starts in each of its processes, read from its files
and from the command that starts it.

The script checker asks this of the program behind a job with few CPUs per GPU: workers that
fit the CPUs, or none at all (the data in memory, nothing to decode in the background), need no
more CPUs; more workers than CPUs share them and the GPUs wait. The loaders are torch's
DataLoader (in a Lightning datamodule too) and Hugging Face's Trainer, whose workers are
`dataloader_num_workers` in TrainingArguments, or on the command line where an
HfArgumentParser reads them. A count is followed through the files' defaults (an argparse
option's, a dataclass field's, a module constant's) and replaced by the command's own option
where the command gives it; one read from the job's CPUs always fits.
"""

import ast
import re
from dataclasses import dataclass

from guidance.engine.code_check.frameworks import HF_ARGUMENTS
from guidance.engine.code_check.program import Program
from guidance.engine.code_check.rules.loading import DATALOADERS, POSITIONS
from guidance.engine.code_check.stated import JOB_CPUS, How, Statements
from guidance.engine.code_check.values import Value, Values

HF_PARSER = "transformers.HfArgumentParser"
HF_WORKERS = "dataloader_num_workers"
LIGHTNING_CLI = re.compile(r"^(lightning|pytorch_lightning)\..*LightningCLI$")
# A command-line option that sets a loader's workers, as scripts write them.
WORKERS_OPTION = re.compile(
    r"^--(?:data\.)?(?:num[_-]?workers|n[_-]?workers|workers|data[_-]?workers|loader[_-]?workers"
    r"|dataloader[_-]num[_-]workers)$",
    re.IGNORECASE,
)
# The job's own CPUs, as a script hands them to the program.
JOB_VARIABLE = re.compile(r"^\$\{?(" + "|".join(sorted(JOB_CPUS)) + r")\b")


@dataclass(frozen=True)
class Workers:
    """A loader and the workers it starts per process: `count` None where neither the files
    nor the command say it. `how`: where the count comes from, in words."""

    file: str
    line: int
    count: int | None
    how: str


@dataclass(frozen=True)
class Loaders:
    """The program's loaders that start workers: the one starting most, and the first whose
    count is not known. Neither: it starts none, or only as many as the job's CPUs."""

    most: Workers | None = None
    unknown: Workers | None = None


def loader_workers(programs: tuple[Program, ...], words: tuple[str, ...] = ()) -> Loaders:
    """The workers the program starts, `words` being the command that starts it."""
    values = {p.name: Values(p) for p in programs}
    statements = Statements(list(programs), values)
    found: list[Workers] = []
    for program in programs:
        reader = _Reader(program, values[program.name], statements, words, programs)
        found += reader.dataloaders() + reader.trainer_arguments()
    found += _hf_command_line(programs, words)
    known = [w for w in found if w.count is not None and w.count > 0]
    return Loaders(
        max(known, key=lambda w: w.count or 0, default=None),
        next((w for w in found if w.count is None), None),
    )


def command_workers(words: tuple[str, ...]) -> tuple[str, str] | None:
    """(option, value) of the command's own workers option (`--num_workers 8`), if any."""
    for index, word in enumerate(words):
        option, equals, value = word.partition("=")
        if not WORKERS_OPTION.match(option):
            continue
        if not equals:
            value = words[index + 1] if index + 1 < len(words) else ""
        return option, value
    return None


def count_of(value: str) -> int | None:
    """A command-line count: a number; 0 for the job's own CPUs (they fit by definition, so
    they count as none beyond them); None where the command does not fix it."""
    if value.isdigit():
        return int(value)
    return 0 if JOB_VARIABLE.match(value) else None


class _Reader:
    def __init__(self, program, values, statements, words, programs):
        self.program, self.values, self.statements = program, values, statements
        self.words, self.programs = words, programs

    def dataloaders(self) -> list[Workers]:
        found = []
        for call in self.program.calls_named(*DATALOADERS):
            value = self.values.argument(call, "num_workers", POSITIONS["num_workers"])
            found.append(self._workers(call, value, "num_workers"))
        return found

    def trainer_arguments(self) -> list[Workers]:
        found = []
        for qualname, calls in self.program.calls_by_name.items():
            if not qualname.startswith(("transformers.", "trl.")):
                continue
            if qualname.rsplit(".", 1)[-1] not in HF_ARGUMENTS:
                continue
            for call in calls:
                value = self.values.argument(call, HF_WORKERS)
                found.append(self._workers(call, value, HF_WORKERS))
        return found

    def _workers(self, call: ast.Call, value: Value | None, name: str) -> Workers:
        line = call.lineno
        if value is None:
            return Workers(self.program.name, line, 0, f"no {name}")
        if value.known:
            number = value.value
            count = number if isinstance(number, int) and not isinstance(number, bool) else 0
            return Workers(self.program.name, line, max(count, 0), f"{name}={value.text}")
        if value.spread:
            return Workers(self.program.name, line, None, f"{name} from {value.text}")
        expr = value.node.value if isinstance(value.node, ast.keyword) else value.node
        return self._stated(call, expr, name) or self._from_command(call, expr, name)

    def _stated(self, call: ast.Call, expr: ast.AST, name: str) -> Workers | None:
        stated = self.statements.of(self.program, expr)
        if stated is None:
            return None
        file, line = self.program.name, call.lineno
        if stated.how is How.JOB:
            return Workers(file, line, 0, f"{name} from the job's CPUs")
        if stated.how is How.TEXT:
            return None  # an environment variable the script may set: see the command
        flags = _flags_of(stated.program, stated.node)
        given = _given(self.words, flags)
        if given is not None:
            option, text = given
            return Workers(file, line, count_of(text), f"{name} from {option} {text}")
        count = stated.value if isinstance(stated.value, int) else 0
        return Workers(file, line, max(count, 0), f"{name} from {stated.where}")

    def _from_command(self, call: ast.Call, expr: ast.AST, name: str) -> Workers:
        """`args.workers`, `self.num_workers`: the command's option of that name where it gives
        one; a Lightning datamodule's own default under LightningCLI."""
        file, line, text = self.program.name, call.lineno, self.program.segment(expr)
        attribute = expr.attr if isinstance(expr, ast.Attribute) else None
        if attribute:
            flags = (f"--{attribute}", f"--data.{attribute}", f"--{attribute.replace('_', '-')}")
            given = _given(self.words, flags)
            if given is not None:
                option, value = given
                return Workers(file, line, count_of(value), f"{name} from {option} {value}")
            default = self._datamodule_default(expr)
            if default is not None:
                return Workers(file, line, default, f"{name} from the datamodule's default")
        return Workers(file, line, None, f"{name}={text}")

    def _datamodule_default(self, expr: ast.Attribute) -> int | None:
        """`self.num_workers` set from `__init__(self, num_workers=8)` in a program that
        LightningCLI runs, started without a config file that could change it."""
        cli = any(LIGHTNING_CLI.match(q) for p in self.programs for q in p.calls_by_name)
        if not cli or any(w in ("--config", "-c") or w.startswith("--config=") for w in self.words):
            return None
        if not (isinstance(expr.value, ast.Name) and expr.value.id == "self"):
            return None
        cls = next((a for a in self.program.ancestors(expr) if isinstance(a, ast.ClassDef)), None)
        body = cls.body if cls is not None else []
        init = next(
            (s for s in body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None
        )
        if init is None:
            return None
        source = next(
            (
                statement.value
                for statement, target in self.program.attribute_assignments.get(expr.attr, ())
                if init in self.program.ancestors(statement)
            ),
            None,
        )
        if not isinstance(source, ast.Name):
            return None
        defaults = _parameter_defaults(init.args)
        default = defaults.get(source.id)
        if isinstance(default, ast.Constant) and isinstance(default.value, int):
            return max(default.value, 0)
        return None


def _parameter_defaults(arguments: ast.arguments) -> dict[str, ast.expr]:
    positional = [*arguments.posonlyargs, *arguments.args]
    with_default = positional[len(positional) - len(arguments.defaults) :]
    found = {a.arg: d for a, d in zip(with_default, arguments.defaults, strict=True)}
    pairs = zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
    return found | {a.arg: d for a, d in pairs if d is not None}


def _hf_command_line(programs: tuple[Program, ...], words: tuple[str, ...]) -> list[Workers]:
    """A program whose TrainingArguments come from HfArgumentParser: the command's
    --dataloader_num_workers, else the Trainer's default of none."""
    for program in programs:
        calls = program.calls_named(HF_PARSER)
        if not calls:
            continue
        given = _given(words, (f"--{HF_WORKERS}", "--dataloader-num-workers"))
        if given is None:
            return []
        option, value = given
        return [Workers(program.name, calls[0].lineno, count_of(value), f"{option} {value}")]
    return []


def _flags_of(program: Program, node: ast.AST) -> tuple[str, ...]:
    """The options that may replace a default: an argparse option's flags, a dataclass field's
    name as HfArgumentParser and similar parsers make it an option."""
    parent = program.parents.get(node)
    if isinstance(node, ast.keyword) and isinstance(parent, ast.Call):
        return tuple(
            a.value
            for a in parent.args
            if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("-")
        )
    statement = program.statement_of(node)
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return (f"--{statement.target.id}",)
    return ()


def _given(words: tuple[str, ...], flags: tuple[str, ...]) -> tuple[str, str] | None:
    """(option, value) where the command gives one of the flags."""
    for index, word in enumerate(words):
        option, equals, value = word.partition("=")
        if option not in flags:
            continue
        if not equals:
            value = words[index + 1] if index + 1 < len(words) else ""
        return option, value
    return None
