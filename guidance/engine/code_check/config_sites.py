"""A framework built by Hydra from YAML (`hydra.utils.instantiate(cfg.trainer)` where the config's
`_target_` is Lightning's Trainer): its arguments are the config's keys, read where each is
written, and a fix is a change to that YAML line, at the key's own indentation."""

import ast
from dataclasses import dataclass

import yaml

from guidance.engine.code_check.configs import ConfigFile, as_yaml
from guidance.engine.code_check.hydra import Composed, Setting
from guidance.engine.code_check.program import Program
from guidance.engine.code_check.snippets import Snippet
from guidance.engine.code_check.values import Value

LIGHTNING_TRAINERS = frozenset(
    {
        "lightning.Trainer",
        "lightning.pytorch.Trainer",
        "lightning.pytorch.trainer.Trainer",
        "lightning.pytorch.trainer.trainer.Trainer",
        "pytorch_lightning.Trainer",
        "pytorch_lightning.trainer.Trainer",
        "pytorch_lightning.trainer.trainer.Trainer",
    }
)


@dataclass(frozen=True)
class ConfigValue(Value):
    """An argument written in a YAML file: `node` is where its value stands there."""

    file: ConfigFile | Program | None = None  # where it is written


@dataclass(frozen=True)
class ConfigNode:
    """The config mapping a framework is built from: its path in the composed config."""

    composed: Composed
    path: str
    # The instantiate() calls that build it: an argument they pass wins over the config's.
    calls: tuple[tuple[Program, ast.Call], ...] = ()

    @property
    def target(self) -> Setting:
        return self.composed.settings[f"{self.path}._target_"]

    def argument(self, name: str) -> ConfigValue | None:
        """The key as the composed config sets it; None where it is not set (the framework's
        default); unknown where it is not a plain value or comes from the command line.
        One the instantiate() call passes is the Python's, unknown here."""
        for program, call in self.calls:
            for keyword in call.keywords:
                if keyword.arg in (name, None):
                    text = program.segment(keyword.value)
                    return ConfigValue(keyword, False, None, text, spread=True, file=program)
        setting = self.composed.get(f"{self.path}.{name}")
        if setting is None:
            return None
        if setting.file is None or setting.spot is None:
            return ConfigValue(self.target.spot, False, None, setting.text, file=self.target.file)
        known = self.composed.value(setting.path)
        text = setting.file.segment(setting.spot)
        if known is None:
            return ConfigValue(setting.spot, False, None, text, file=setting.file)
        return ConfigValue(setting.spot, True, known.value, text, file=setting.file)

    def fix(self, changes: dict[str, str]) -> Snippet:
        """The keys set to these values (Python literals, written as YAML): in place where
        the file sets a key on one line, else added below `_target_`; no after where the keys
        are written in different files or in a way a line edit cannot change."""
        target = self.target
        edits: list[tuple[ConfigFile, int, str]] = []  # (file, line, new text); 0: insert
        for name, python in changes.items():
            value = as_yaml(ast.literal_eval(python))
            setting = self.composed.get(f"{self.path}.{name}")
            if setting is None:
                edits.append((target.file, 0, f"{name}: {value}"))
                continue
            line = _replaced(setting, value)
            if setting.file is None or line is None:
                return _shown(target).without_after()
            edits.append((setting.file, setting.spot.lineno, line))
        if len({id(file) for file, _, _ in edits}) != 1:
            return _shown(target).without_after()
        return _edited(target, edits)


def _replaced(setting: Setting, value: str) -> str | None:
    """The key's line with its value replaced, or None where the value is not a plain scalar
    written on the key's own line."""
    if not isinstance(setting.node, yaml.ScalarNode) or setting.spot is None:
        return None
    spot = setting.spot
    if spot.lineno != spot.end_lineno or spot.lineno != setting.key_line:
        return None
    text = setting.file.lines[spot.lineno - 1]
    return text[: spot.col_offset] + value + text[spot.end_col_offset :]


def _shown(target: Setting) -> Snippet:
    line = target.spot.lineno
    return Snippet(target.file.line_text(line, line), "", line, line)


def _edited(target: Setting, edits: list[tuple[ConfigFile, int, str]]) -> Snippet:
    file = edits[0][0]
    replaced = {line: text for _, line, text in edits if line}
    added = [text for _, line, text in edits if not line]
    lines = sorted(replaced)
    if added:
        if target.file is not file or _flow(target):
            return _shown(target).without_after()
        lines.append(target.key_line)
    first, last = min(lines), max(lines)
    after = []
    for number in range(first, last + 1):
        after.append(replaced.get(number, file.lines[number - 1]))
        if added and number == target.key_line:
            indent = file.indent(number)
            after += [indent + text for text in added]
    return Snippet(file.line_text(first, last), "\n".join(after), first, last)


def _flow(target: Setting) -> bool:
    """`trainer: {_target_: ...}`: a key added on a line of its own would not belong to it."""
    line = target.file.lines[target.key_line - 1]
    return not line.lstrip().startswith("_target_")
