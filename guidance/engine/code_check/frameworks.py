"""The frameworks that run a training loop for the program, found by their calls: Lightning's
Trainer (or Fabric, or LightningCLI, whose `trainer_defaults` are the Trainer's arguments),
Hugging Face's Trainer and its TrainingArguments (and the TRL configs built
on them), accelerate's Accelerator. Rules read such a program in the framework's own terms: the
framework's argument, not a DataLoader or a flag, is where a change goes."""

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from guidance.engine.code_check import hydra
from guidance.engine.code_check.config_sites import LIGHTNING_TRAINERS, ConfigNode
from guidance.engine.code_check.program import Program
from guidance.engine.code_check.snippets import (
    Snippet,
    replace_values,
    set_dict_entries,
    set_keywords,
    short_call,
)
from guidance.engine.code_check.values import Value, Values

if TYPE_CHECKING:
    from guidance.engine.code_check.context import Project

_LIGHTNING = ("lightning.", "pytorch_lightning.")
_HUGGING_FACE = ("transformers.", "trl.")
_FRAMEWORKS = (*_LIGHTNING, *_HUGGING_FACE, "accelerate.")
# TrainingArguments and its subclasses: they take the same dataloader and precision arguments.
HF_ARGUMENTS = frozenset(
    {
        "TrainingArguments",
        "Seq2SeqTrainingArguments",
        "SFTConfig",
        "DPOConfig",
        "ORPOConfig",
        "KTOConfig",
        "RewardConfig",
        "GRPOConfig",
    }
)


@dataclass(frozen=True)
class Site:
    program: Program  # for a config's framework, the YAML file its `_target_` is written in
    call: ast.Call  # ...and that `_target_`'s value
    cli: bool = False  # LightningCLI(...): the Trainer's arguments are its trainer_defaults
    config: ConfigNode | None = None  # built by Hydra from this config: its keys are the arguments


_DEFAULTS = "trainer_defaults"


@dataclass
class Frameworks:
    lightning: list[Site] = field(default_factory=list)  # Trainer / Fabric / LightningCLI(...)
    hf_arguments: list[Site] = field(default_factory=list)  # TrainingArguments(...) and kin
    hf_trainers: list[Site] = field(default_factory=list)  # Trainer(...), SFTTrainer(...)
    accelerators: list[Site] = field(default_factory=list)  # Accelerator(...)
    trains: bool = False

    @property
    def any(self) -> bool:
        return bool(self.lightning or self.hf_arguments or self.hf_trainers or self.accelerators)

    @property
    def hugging_face(self) -> bool:
        return bool(self.hf_arguments or self.hf_trainers)


def find(project: "Project") -> Frameworks:
    found = Frameworks()
    for program in project.programs:
        for qualname, calls in program.calls_by_name.items():
            if not qualname.startswith(_FRAMEWORKS):
                continue  # most calls: one test each
            last = qualname.rsplit(".", 1)[-1]
            sites = [Site(program, call) for call in calls]  # in source order
            if qualname.startswith(_LIGHTNING) and last in ("Trainer", "Fabric"):
                found.lightning += sites
            elif qualname.startswith(_LIGHTNING) and last == "LightningCLI":
                found.lightning += [Site(program, site.call, cli=True) for site in sites]
                # It trains by itself unless told not to (run=False, then cli.trainer.fit).
                found.trains |= any(_runs(project.values[program.name], s.call) for s in sites)
            elif qualname.startswith(_HUGGING_FACE) and last in HF_ARGUMENTS:
                found.hf_arguments += sites
            elif qualname.startswith(_HUGGING_FACE) and last.endswith("Trainer"):
                found.hf_trainers += sites
            elif qualname.startswith("accelerate.") and last == "Accelerator":
                found.accelerators += sites
    found.lightning += _from_configs(project)
    if found.lightning:
        found.trains |= any(_on_trainer(p, c) for p, c in project.calls_with_attr("fit"))
    if found.hf_trainers:
        found.trains |= any(_on_trainer(p, c) for p, c in project.calls_with_attr("train"))
    return found


def _from_configs(project: "Project") -> list[Site]:
    """Lightning's Trainer as Hydra builds it: `instantiate(cfg.trainer)` where the composed
    config's `_target_` there names the Trainer."""
    composed = project.hydra
    if composed is None:
        return []
    sites = []
    builds = hydra.instantiated(project.programs, composed)
    for path in dict.fromkeys(path for _, _, path in builds):  # each built config once
        target = composed.get(f"{path}._target_")
        known = composed.value(f"{path}._target_")
        if target is None or target.file is None or known is None:
            continue
        if known.value in LIGHTNING_TRAINERS:
            calls = tuple((program, call) for program, call, built in builds if built == path)
            config = ConfigNode(composed, path, calls)
            sites.append(Site(target.file, target.spot, config=config))  # type: ignore[arg-type]
    return sites


def describe(site: Site) -> str:
    """How a finding names the framework's call: as written, or its config's `_target_`."""
    if site.config is not None:
        return f"The Trainer Hydra builds from {site.program.name} (cfg.{site.config.path})"
    return f"`{short_call(site.program, site.call)}`"


def _runs(values: Values, call: ast.Call) -> bool:
    run = values.argument(call, "run")
    return run is None or not run.known or bool(run.value)


def argument(values: Values, site: Site, name: str, position: int | None = None) -> Value | None:
    """The framework's argument `name`: the call's own, for LightningCLI the entry of its
    trainer_defaults (unknown where they are not a literal dict), for a config the key."""
    if site.config is not None:
        return site.config.argument(name)
    if not site.cli:
        return values.argument(site.call, name, position)
    defaults = values.argument(site.call, _DEFAULTS)
    if defaults is None:
        return None
    given = _defaults_dict(values, site)
    if given is None:
        return Value(defaults.node, False, None, defaults.text, spread=True)
    if isinstance(given, ast.Dict):
        items = values.dict_items(given)
    else:
        items = {k.arg: k.value for k in given.keywords}
    if items is None:
        return Value(defaults.node, False, None, defaults.text, spread=True)
    return values.value(items[name]) if name in items else None


def _defaults_dict(values: Values, site: Site) -> ast.Dict | ast.Call | None:
    """The `{...}` or `dict(...)` LightningCLI's trainer_defaults is written as (directly or
    through a name assigned once); None where it is anything else."""
    keyword = next((k for k in site.call.keywords if k.arg == _DEFAULTS), None)
    node = keyword.value if keyword is not None else None
    for _ in range(8):
        if isinstance(node, ast.Name):
            node = values.single_assignment(node)
            continue
        break
    if isinstance(node, ast.Dict) and values.dict_items(node) is not None:
        return node
    if isinstance(node, ast.Call) and values.dict_items(node) is not None:
        return node
    return None


def settings_fix(values: Values, site: Site, changes: dict[str, str]) -> Snippet:
    """The framework's call with these arguments set: for LightningCLI, entries of its
    trainer_defaults (the dict added where there is none); no mechanical after where the
    defaults are not a literal dict; for a config, its YAML lines."""
    if site.config is not None:
        return site.config.fix(changes)
    if not site.cli:
        return _in_place(site.program, site.call, changes)
    if not any(k.arg == _DEFAULTS for k in site.call.keywords):
        entries = ", ".join(f'"{name}": {text}' for name, text in changes.items())
        return set_keywords(site.program, site.call, {_DEFAULTS: f"{{{entries}}}"})
    given = _defaults_dict(values, site)
    if isinstance(given, ast.Dict):
        entries = {
            key.value: value
            for key, value in zip(given.keys, given.values, strict=True)
            if isinstance(key, ast.Constant) and isinstance(key.value, str)
        }
        if changes.keys() <= entries.keys():
            return replace_values(site.program, entries, changes)
        return set_dict_entries(site.program, given, changes)
    if isinstance(given, ast.Call):
        return _in_place(site.program, given, changes)
    return set_keywords(site.program, site.call, {}).without_after()


def _in_place(program: Program, call: ast.Call, changes: dict[str, str]) -> Snippet:
    """The call's keywords set: where it gives them all, only their lines are shown."""
    given = {k.arg: k.value for k in call.keywords if k.arg}
    if changes and changes.keys() <= given.keys():
        return replace_values(program, given, changes)
    return set_keywords(program, call, changes)


def _on_trainer(program: Program, call: ast.Call) -> bool:
    """`trainer.fit(...)`, `Trainer(...).train()`: a trainer's method, not a model's."""
    if not isinstance(call.func, ast.Attribute):
        return False
    receiver = call.func.value
    if isinstance(receiver, ast.Call):
        return True
    return "trainer" in program.segment(receiver).lower()
