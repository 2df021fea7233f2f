"""A Hydra program's config, composed from the YAML files given beside it as Hydra composes it
at start: `@hydra.main(config_path=..., config_name=...)` names the primary config, whose
`defaults:` list pulls in one file per group (`- trainer: gpu` -> <config_path>/trainer/gpu.yaml,
placed under `trainer`), group files may list their own defaults, the file's own keys come last
(or where `_self_` stands), and the command line's overrides (`trainer=ddp`,
`trainer.devices=1`) come after all.

Narrow on purpose: a file the composition needs and that was not given, a resolver other than
`oc.env`, a relative interpolation leave the value unknown, never guessed."""

import ast
import posixpath
import re
from dataclasses import dataclass, field

import yaml

from guidance.engine.code_check.configs import ConfigFile, Spot, is_config, plain, plain_text
from guidance.engine.code_check.program import Program

_MAIN = "hydra.main"
INSTANTIATE = ("hydra.utils.instantiate",)
_DEPTH = 8  # defaults lists inside defaults lists, interpolations of interpolations
_INTERPOLATION = re.compile(r"\$\{([^${}]*)\}")
_ENV = re.compile(r"^oc\.env:\s*([A-Za-z_][A-Za-z0-9_]*)\s*(,.*)?$")
_GROUP = re.compile(r"^[A-Za-z0-9_][\w\-/]*$")
_OVERRIDE = re.compile(r"^(\+{0,2})([A-Za-z_][\w\-./@]*)=(.*)$", re.DOTALL)


@dataclass(frozen=True)
class Setting:
    """Where a composed key's value comes from: a file's entry, or the command line (`text`)."""

    path: str
    file: ConfigFile | None = None
    spot: Spot | None = None  # the value as written in the file
    key_line: int = 0  # the key's line in the file
    node: yaml.Node | None = None
    text: str = ""  # from the command line: the override's value as typed

    @property
    def mapping(self) -> bool:
        return isinstance(self.node, yaml.MappingNode)


@dataclass(frozen=True)
class Known:
    """A value followed to its end: the plain value, and every key it was read through
    (`data.data_dir` then `paths.data_dir`), the first one's setting first."""

    value: object
    through: tuple[Setting, ...]


@dataclass
class Composed:
    """The config as the program sees it: dotted path -> where it is set."""

    settings: dict[str, Setting] = field(default_factory=dict)
    main: tuple[Program, ast.AST] | None = None  # the file and the @hydra.main decorator

    def get(self, path: str) -> Setting | None:
        return self.settings.get(path)

    def value(self, path: str) -> Known | None:
        """The key's plain value with `${...}` followed; None where it is not set, not plain
        or not followed to the end."""
        return self._value(path, _DEPTH)

    def _value(self, path: str, depth: int) -> Known | None:
        setting = self.settings.get(path)
        if setting is None or depth <= 0:
            return None
        if setting.file is None:
            raw: object = plain_text(setting.text)
        else:
            found = plain(setting.node)
            if found is None:
                return None
            raw = found[0]
        if not isinstance(raw, str) or "${" not in raw:
            return Known(raw, (setting,))
        whole = _INTERPOLATION.fullmatch(raw)
        if whole:
            inner = self._reference(whole.group(1), depth)
            if inner is None:
                return None
            return Known(inner.value, (setting, *inner.through))
        through = [setting]
        parts: list[str] = []
        end = 0
        for match in _INTERPOLATION.finditer(raw):
            inner = self._reference(match.group(1), depth)
            if inner is None or not isinstance(inner.value, (str, int, float)):
                return None
            parts += [raw[end : match.start()], str(inner.value)]
            through += inner.through
            end = match.end()
        text = "".join([*parts, raw[end:]])
        return None if "${" in text else Known(text, tuple(through))

    def _reference(self, inside: str, depth: int) -> Known | None:
        inside = inside.strip()
        env = _ENV.match(inside)
        if env:
            return Known(f"${env.group(1)}", ())  # the job's variable, as a shell writes it
        if ":" in inside or inside.startswith(".") or not inside:
            return None  # another resolver, or a key relative to this one
        return self._value(inside, depth - 1)

    def targets(self) -> dict[str, str]:
        """Each mapping's `_target_` by the mapping's path ("" for the top)."""
        found = {}
        for path in self.settings:
            if path == "_target_" or path.endswith("._target_"):
                known = self.value(path)
                if known is not None and isinstance(known.value, str):
                    found[path.removesuffix("_target_").removesuffix(".")] = known.value
        return found

    def under(self, path: str) -> dict[str, Setting]:
        """The keys directly inside the mapping at `path`, by their own name."""
        prefix = f"{path}." if path else ""
        return {
            key[len(prefix) :]: setting
            for key, setting in self.settings.items()
            if key.startswith(prefix) and "." not in key[len(prefix) :]
        }


def compose(
    programs: tuple[Program, ...] | list[Program],
    configs: tuple[ConfigFile, ...] | list[ConfigFile],
    overrides: tuple[str, ...] = (),
) -> Composed | None:
    """The composed config of the first `@hydra.main` whose primary config was given; None
    where no file declares one, or its primary config is not among the files."""
    if not configs:
        return None
    for program in programs:
        for decorator, path, name in _mains(program):
            folder = posixpath.normpath(posixpath.join(posixpath.dirname(program.name), path))
            primary = find(configs, folder, name)
            if primary is None:
                continue
            composed = Composed(main=(program, decorator))
            _Composer(configs, folder, composed, overrides).primary(primary)
            return composed
    return None


def _mains(program: Program):
    """(decorator, config_path, config_name) of each `@hydra.main(...)` written with both."""
    for node in program.by_type[ast.FunctionDef]:
        for decorator in node.decorator_list:
            if not isinstance(decorator, ast.Call) or program.qualname(decorator.func) != _MAIN:
                continue
            given = {k.arg: k.value for k in decorator.keywords}
            path, name = given.get("config_path"), given.get("config_name")
            if _text(path) is not None and _text(name) is not None:
                yield decorator, _text(path), _text(name)


def _text(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def find(configs, folder: str, name: str) -> ConfigFile | None:
    """<folder>/<name>.yaml among the files: by its path, else by its group folder and name
    (files given from elsewhere in the tree), else by its name alone where no other file has
    it (a page's upload keeps only the file's name)."""
    name = name if is_config(name) else f"{name}.yaml"
    stem = posixpath.normpath(posixpath.join(folder, name)).rsplit(".", 1)[0]
    names = {f"{stem}.yaml", f"{stem}.yml"}
    exact = [c for c in configs if posixpath.normpath(c.name) in names]
    if exact:
        return exact[0]
    tail = "/".join(stem.split("/")[-2:])
    ends = {tail + suffix for suffix in (".yaml", ".yml")}
    close = [c for c in configs if any(c.name == e or c.name.endswith("/" + e) for e in ends)]
    if len(close) == 1:
        return close[0]
    if not close:
        base = {posixpath.basename(stem) + suffix for suffix in (".yaml", ".yml")}
        alone = [c for c in configs if c.name in base]  # given without its folders
        if len(alone) == 1:
            return alone[0]
    return None


class _Composer:
    def __init__(self, configs, folder: str, composed: Composed, overrides: tuple[str, ...]):
        self.configs, self.folder, self.composed = configs, folder, composed
        self.choices: dict[str, str | None] = {}
        self.values: list[tuple[str, str]] = []
        for word in overrides:
            match = _OVERRIDE.match(word)
            if not match:
                continue
            key, value = match.group(2), match.group(3).strip("'\"")
            if "." not in key and _GROUP.match(key) and "@" not in key:
                self.choices[key] = value or None
            else:
                self.values.append((key.split("@", 1)[0], value))

    def primary(self, config: ConfigFile) -> None:
        self._file(config, "", "", _DEPTH)
        for key, value in self.values:
            self._drop(key)
            self.composed.settings[key] = Setting(key, text=value)

    def _file(self, config: ConfigFile, package: str, group: str, depth: int) -> None:
        """A file's defaults, then its own keys (or in `_self_`'s place), under `package`."""
        if depth <= 0:
            return
        if config.package is not None:
            package = _package(config.package, group)
        defaults = config.entries.get("defaults")
        items = (
            defaults.value.value
            if defaults and isinstance(defaults.value, yaml.SequenceNode)
            else []
        )
        own_done = False
        for item in items:
            if isinstance(item, yaml.ScalarNode) and item.value == "_self_":
                self._own(config, package)
                own_done = True
            elif isinstance(item, yaml.ScalarNode) and isinstance(item.value, str):
                sibling = find(self.configs, posixpath.join(self.folder, group), item.value)
                if sibling is not None and sibling is not config:
                    self._file(sibling, package, group, depth - 1)
            elif isinstance(item, yaml.MappingNode) and len(item.value) == 1:
                self._choice(item.value[0], package, group, depth)
        if not own_done:
            self._own(config, package)

    def _choice(self, pair, package: str, group: str, depth: int) -> None:
        """`- trainer: gpu` (also `- override ...`, `- optional ...`, `- group@package: name`):
        the group's file under the group's package, or the command line's choice for it."""
        key, value = pair
        if not isinstance(key, yaml.ScalarNode) or not isinstance(key.value, str):
            return
        words = key.value.split()
        if words and words[0] in ("override", "optional"):
            words = words[1:]
        if len(words) != 1:
            return
        written, _, at = words[0].partition("@")
        if written.startswith("/"):
            name = written.lstrip("/")
            where = name.replace("/", ".")
        else:
            name = posixpath.join(group, written) if group else written
            where = _join(package, written.replace("/", "."))
        if at == "_global_" or at.startswith("_global_."):
            where = at.removeprefix("_global_").lstrip(".")
        elif at:
            where = _join(package, at)
        choice = self.choices.get(name, _scalar(value))
        if choice is None:
            return
        found = find(self.configs, posixpath.join(self.folder, name), choice)
        if found is not None:
            self._file(found, where, name, depth - 1)

    def _own(self, config: ConfigFile, package: str) -> None:
        prefix = f"{package}." if package else ""
        for path, entry in config.entries.items():
            if path == "defaults" or path.startswith("defaults."):
                continue
            full = prefix + path
            if not isinstance(entry.value, yaml.MappingNode):
                self._drop(full)
            self.composed.settings[full] = Setting(
                full, config, entry.spot, entry.key.start_mark.line + 1, entry.value
            )
        if package and package not in self.composed.settings and config.root is not None:
            self.composed.settings[package] = Setting(package, config, None, 0, config.root)

    def _drop(self, path: str) -> None:
        """A value replacing a mapping: the mapping's keys go with it."""
        for key in [k for k in self.composed.settings if k.startswith(path + ".")]:
            del self.composed.settings[key]


def _join(*parts: str) -> str:
    return ".".join(part for part in parts if part)


def _package(header: str, group: str) -> str:
    if header == "_global_" or header.startswith("_global_."):
        return header.removeprefix("_global_").lstrip(".")
    group_package = group.replace("/", ".")
    return header.replace("_group_", group_package).replace("_name_", "")


def _scalar(node: yaml.Node) -> str | None:
    found = plain(node)
    if found is None or found[0] is None:
        return None
    return str(found[0])


# --- what the program does with it ------------------------------------------------------------


def instantiated(programs, composed: Composed) -> list[tuple[Program, ast.Call, str]]:
    """`hydra.utils.instantiate(cfg.trainer, ...)`: the program, the call and the config path
    it builds ("trainer"), for each call whose first argument is a plain attribute chain."""
    found = []
    for program in programs:
        for call in program.calls_named(*INSTANTIATE):
            if not call.args:
                continue
            path = _config_path(call.args[0])
            if path and composed.get(path) is not None:
                found.append((program, call, path))
    return found


def _config_path(node: ast.AST) -> str | None:
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or not names:
        return None
    return ".".join(reversed(names))


def constructed(composed: Composed | None, programs, program: Program, cls: ast.ClassDef):
    """The keys Hydra passes to the class's constructor: of the one config mapping whose
    `_target_` names this class of this file (`src.data.cifar.CIFARData` for
    src/data/cifar.py's CIFARData); None where no mapping or several name it, or where a call
    in the files instantiates it with arguments of its own (they win over the config's)."""
    if composed is None or program.parents.get(cls) is not program.tree:
        return None
    module = program.name.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
    found = [
        path
        for path, target in composed.targets().items()
        if target.rpartition(".")[2] == cls.name and _same_module(target.rpartition(".")[0], module)
    ]
    if len(found) != 1:
        return None
    for _, call, path in instantiated(programs, composed):
        given = [k for k in call.keywords if not (k.arg or "").startswith("_")]
        if path == found[0] and (given or len(call.args) > 1):
            return None
    return {name: s for name, s in composed.under(found[0]).items() if not name.startswith("_")}


def _same_module(named: str, module: str) -> bool:
    """`src.data.cifar` names src/data/cifar.py, and data/cifar.py given without src/, and
    cifar.py given alone."""
    return bool(named) and (
        named == module or named.endswith(f".{module}") or module.endswith(f".{named}")
    )
