"""YAML config files given beside a program (Hydra's configs/ folder), read with their line
numbers and never run: PyYAML's composer with the safe loader's tags builds the node tree, and
only plain values (numbers, strings, booleans, null) are ever made from it. A file that does not
parse raises NotYaml with the reason in words and its line.

What a file says is a flat table of dotted keys (`trainer.devices`) to where each is written;
hydra.py composes those tables as Hydra would for the program."""

from dataclasses import dataclass, field

import yaml
from yaml.constructor import ConstructorError, SafeConstructor

from guidance.engine.code_check.snippets import Snippet

SUFFIXES = (".yaml", ".yml")
# A config is walked this deep and this wide at most: anchors let a short file name a tree
# of millions of entries, and recursive ones a tree without end.
MAX_DEPTH = 20
MAX_ENTRIES = 5_000
_PACKAGE = "# @package "


class NotYaml(Exception):
    """The text is not YAML that a config can be: `line` from 1, None where there is none."""

    def __init__(self, reason: str, line: int | None = None):
        super().__init__(reason)
        self.reason = reason
        self.line = line


def is_config(name: str) -> bool:
    return name.lower().endswith(SUFFIXES)


@dataclass(frozen=True)
class Spot:
    """Where a YAML value is written, in the parser's terms (lines from 1, columns from 0), so
    that a finding can point at it as it points at Python code."""

    lineno: int
    col_offset: int
    end_lineno: int
    end_col_offset: int

    @classmethod
    def of(cls, node: yaml.Node) -> "Spot":
        start, end = node.start_mark, node.end_mark
        return cls(start.line + 1, start.column, end.line + 1, end.column)


@dataclass(frozen=True)
class Entry:
    """One key as written: its path from the file's top (`trainer.precision`), the key's and
    the value's nodes."""

    path: str
    key: yaml.Node
    value: yaml.Node

    @property
    def spot(self) -> Spot:
        return Spot.of(self.value)


@dataclass
class ConfigFile:
    name: str
    text: str
    lines: list[str]
    root: yaml.Node | None
    package: str | None = None  # "# @package _global_" and the like, where the file says
    entries: dict[str, Entry] = field(default_factory=dict)  # dotted path -> entry

    def column(self, node: Spot) -> int:
        """The value's column from 1, as the code checker's findings count."""
        return node.col_offset + 1

    def line_text(self, first: int, last: int) -> str:
        return "\n".join(self.lines[first - 1 : last])

    def segment(self, spot: Spot) -> str:
        if spot.lineno != spot.end_lineno:
            return self.lines[spot.lineno - 1][spot.col_offset :]
        return self.lines[spot.lineno - 1][spot.col_offset : spot.end_col_offset]

    def indent(self, line: int) -> str:
        text = self.lines[line - 1]
        return text[: len(text) - len(text.lstrip())]


def read_config(name: str, text: str) -> ConfigFile:
    """The file composed and its keys indexed; NotYaml where it does not parse, holds more than
    one document, or is not a mapping at its top."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        reason = (error.problem or error.context or "not valid YAML").rstrip(".")
        raise NotYaml(reason, mark.line + 1 if mark else None) from None
    except yaml.YAMLError as error:
        raise NotYaml(str(error).splitlines()[0] if str(error) else "not valid YAML") from None
    except RecursionError:
        raise NotYaml("nested too deeply to read") from None
    if root is not None and not isinstance(root, yaml.MappingNode):
        raise NotYaml(
            "a config is a mapping of keys to values at its top", root.start_mark.line + 1
        )
    config = ConfigFile(name, text, text.split("\n"), root, _package(text))
    if root is not None:
        _index(config, root)
    return config


def _package(text: str) -> str | None:
    """Hydra's package header: a comment line before anything else."""
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith(_PACKAGE):
            return stripped.removeprefix(_PACKAGE).strip()
        if stripped and not stripped.startswith("#"):
            return None
    return None


def _index(config: ConfigFile, root: yaml.MappingNode) -> None:
    """Every key by its dotted path, breadth by breadth, within the limits; a node met again
    through an anchor is entered again under its new path, but the walk stays bounded."""
    stack: list[tuple[str, yaml.MappingNode, int]] = [("", root, 0)]
    while stack:
        prefix, node, depth = stack.pop()
        for key, value in node.value:
            if len(config.entries) >= MAX_ENTRIES:
                return
            if not isinstance(key, yaml.ScalarNode) or key.value == "<<":
                continue
            path = f"{prefix}{key.value}"
            config.entries[path] = Entry(path, key, value)
            if isinstance(value, yaml.MappingNode) and depth < MAX_DEPTH:
                stack.append((f"{path}.", value, depth + 1))


def plain(node: yaml.Node | None) -> tuple[object] | None:
    """The value of a scalar node as the safe loader makes it: (value,), or None for a list, a
    mapping or a value it cannot make (a bad date, an unknown tag)."""
    if not isinstance(node, yaml.ScalarNode):
        return None
    try:
        return (SafeConstructor().construct_object(node),)
    except (ConstructorError, ValueError, TypeError, OverflowError):
        return None


def plain_text(text: str) -> object:
    """A value given as text (a command-line override) read as YAML reads a scalar; the text
    itself where it is not one."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return text
    found = plain(node)
    return found[0] if found is not None else text


def as_yaml(python: object) -> str:
    """A plain Python value written as a YAML scalar that reads back as itself: True -> true,
    "bf16-mixed" bare, any other string double-quoted with YAML's escapes."""
    if python is None:
        return "null"
    if isinstance(python, bool):
        return "true" if python else "false"
    if isinstance(python, int):
        return str(python)
    if isinstance(python, float):
        text = repr(python)
        # YAML 1.1 (PyYAML) reads 1e+16 as a string: its floats have a dot.
        return text.replace("e", ".0e", 1) if "e" in text and "." not in text else text
    text = str(python)
    if _bare(text):
        return text
    return '"' + "".join(_escaped(c) for c in text) + '"'


def _bare(text: str) -> bool:
    return (
        text.isascii()
        and text.isprintable()
        and text == text.strip()
        and text != ""
        and text[0] not in "-?"
        and not any(c in text for c in ":#{}[],&*!|>'\"%@`\\")
        and _read_as_string(text)
    )


def _read_as_string(text: str) -> bool:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return False
    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:str"


def _escaped(character: str) -> str:
    if character in '"\\':
        return "\\" + character
    code = ord(character)
    if character.isprintable() and character not in "\x85\u2028\u2029" and code != 0xFEFF:
        return character
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def replace_scalar(config: ConfigFile, spot: Spot, text: str) -> Snippet:
    """The value's line with the value replaced by `text` (a YAML scalar), the rest of the line
    (the key, a comment) as written; no after for a value over several lines."""
    line = config.line_text(spot.lineno, spot.lineno)
    if spot.lineno != spot.end_lineno:
        return Snippet(line, "", spot.lineno, spot.lineno)
    after = line[: spot.col_offset] + text + line[spot.end_col_offset :]
    return Snippet(line, after, spot.lineno, spot.lineno)
