"""Whether a program started as one process uses several GPUs by itself, read from its files.

The script checker asks this of the program behind a plain `python train.py` on a multi-GPU job:
a Hugging Face Trainer spreads over every visible GPU, `device_map="auto"` shards a large model
over them, `nn.DataParallel` copies the model to each, a process that spawns one worker per GPU
(`torch.multiprocessing.spawn`) or a tuner that runs one trial per GPU (Ray Tune, Syne Tune) uses
them all; Lightning does with `devices` other than 1, and so does a LightningCLI, whose Trainer
takes `devices` from its `trainer_defaults` or the command line (`--trainer.devices=1`). A
program that shows none of these uses the one GPU that PyTorch and TensorFlow pick by default.
"""

import ast
from dataclasses import dataclass

from guidance.engine.code_check import hydra
from guidance.engine.code_check.beside_script import configs_of
from guidance.engine.code_check.config_sites import LIGHTNING_TRAINERS as LIGHTNING_TARGETS
from guidance.engine.code_check.program import Program

# Calls that, made once in one process, put work on every GPU the job holds.
SPREADING_CALLS = {
    "transformers.Trainer": "a Hugging Face Trainer, which uses every visible GPU",
    "transformers.Seq2SeqTrainer": "a Hugging Face Trainer, which uses every visible GPU",
    "trl.SFTTrainer": "a Hugging Face Trainer, which uses every visible GPU",
    "torch.nn.DataParallel": "nn.DataParallel, which copies the model to every visible GPU",
    "torch.nn.parallel.DataParallel": "nn.DataParallel, which copies the model to every GPU",
    "torch.multiprocessing.spawn": "torch.multiprocessing.spawn, one process per GPU",
    "torch.distributed.launcher.api.elastic_launch": "an elastic launch, one process per GPU",
    "ray.tune.run": "Ray Tune, which runs trials side by side, each on its own GPU",
    "ray.tune.Tuner": "Ray Tune, which runs trials side by side, each on its own GPU",
    "ray.train.torch.TorchTrainer": "Ray Train, one worker per GPU",
    "syne_tune.Tuner": "Syne Tune, which runs trials side by side, each on its own GPU",
    "tensorflow.distribute.MirroredStrategy": "tf.distribute.MirroredStrategy, over every GPU",
    "jax.pmap": "jax.pmap, over every device",
}
# Lightning's Trainer uses every GPU it is given unless told `devices=1` (or a single index).
LIGHTNING = ("lightning.", "pytorch_lightning.")
LIGHTNING_TRAINERS = ("lightning.Trainer", "lightning.pytorch.Trainer", "pytorch_lightning.Trainer")
# device_map values that place a model over all GPUs.
SHARDING_MAPS = ("auto", "balanced", "balanced_low_0", "sequential")


@dataclass(frozen=True)
class Spread:
    """What in the program uses several GPUs: the file, its line and the words for it."""

    file: str
    line: int
    how: str


def spread_over_gpus(programs: tuple[Program, ...], words: tuple[str, ...] = ()) -> Spread | None:
    """The first place in the program that uses several GPUs from one process, or None when the
    files show none. `words`: the command line that starts it, whose options a LightningCLI
    reads and whose Hydra overrides (`trainer.devices=1`) replace what its YAML configs say."""
    found = next(filter(None, map(_in_program, programs)), None)
    return found or _in_clis(programs, words) or _in_configs(programs, words)


def unsettled(programs: tuple[Program, ...], words: tuple[str, ...] = ()) -> str:
    """Why the files given cannot say how many GPUs the program uses, in words; "" where they
    can. A program that builds its parts with Hydra from YAML configs not given may build a
    Trainer over every GPU: the files that would say so are missing."""
    builds = any(program.calls_named(*hydra.INSTANTIATE) for program in programs)
    if builds and hydra.compose(programs, configs_of(programs), tuple(words)) is None:
        return (
            "the program builds its parts with Hydra's instantiate from YAML configs that "
            "were not given"
        )
    return ""


def _in_configs(programs: tuple[Program, ...], words: tuple[str, ...]) -> Spread | None:
    """A Lightning Trainer that Hydra builds from the configs, over several devices."""
    composed = hydra.compose(programs, configs_of(programs), tuple(words))
    if composed is None:
        return None
    for _, _, path in hydra.instantiated(programs, composed):
        target = composed.get(f"{path}._target_")
        known = composed.value(f"{path}._target_")
        if target is None or known is None or known.value not in LIGHTNING_TARGETS:
            continue
        setting = composed.get(f"{path}.devices") or composed.get(f"{path}.gpus")
        if setting is None:
            # Lightning's default is "auto": every GPU the job gives it.
            return Spread(target.file.name, target.spot.lineno, "a Lightning Trainer on every GPU")
        devices = composed.value(setting.path)
        if devices is not None and not _several(devices.value):
            return None
        # Several, or not known (the checker does not claim idle GPUs on a value it cannot read).
        if setting.file is None:
            return Spread("the command line", 0, f"a Lightning Trainer over {setting.text} devices")
        written = setting.file.segment(setting.spot)
        return Spread(
            setting.file.name, setting.spot.lineno, f"a Lightning Trainer over {written} devices"
        )
    return None


def _several(devices: object) -> bool:
    """Lightning's devices as a config gives them: 1, "1", 0, null or a list of one: one."""
    if isinstance(devices, list):
        return len(devices) != 1
    if isinstance(devices, str) and devices.strip().startswith("["):
        return devices.count(",") > 0
    return devices not in (1, "1", 0, None)


def _in_program(program: Program) -> Spread | None:
    for qualname, how in SPREADING_CALLS.items():
        calls = program.calls_named(qualname)
        if calls:
            return Spread(program.name, calls[0].lineno, how)
    for call in program.calls_named(*LIGHTNING_TRAINERS):
        if _lightning_several(call):
            return Spread(program.name, call.lineno, "a Lightning Trainer over several devices")
    for keyword in program.by_type[ast.keyword]:
        if keyword.arg == "device_map" and _sharding(keyword.value):
            return Spread(
                program.name,
                keyword.value.lineno,
                f'device_map="{keyword.value.value}", which shards the model over every GPU',
            )
    return None


def _lightning_several(call: ast.Call) -> bool:
    """Lightning's devices: "auto" and -1 mean every GPU; one GPU only when told 1 or [i]."""
    return _devices_several(
        next((k.value for k in call.keywords if k.arg in ("devices", "gpus")), None)
    )


def _devices_several(devices: ast.AST | None) -> bool:
    if devices is None:
        return True  # "auto": every visible GPU
    if isinstance(devices, ast.Constant):
        return devices.value not in (1, "1", 0, None)
    if isinstance(devices, ast.List | ast.Tuple):
        return len(devices.elts) != 1
    return True  # from the command line or a config: as many as the job gives


def _in_clis(programs: tuple[Program, ...], words: tuple[str, ...]) -> Spread | None:
    """A LightningCLI whose Trainer gets several devices: a Lightning Trainer by another name."""
    for program in programs:
        for qualname, calls in program.calls_by_name.items():
            if not (qualname.startswith(LIGHTNING) and qualname.endswith(".LightningCLI")):
                continue
            for call in calls:
                if _cli_several(call, words):
                    how = "LightningCLI, whose Trainer uses every GPU"
                    return Spread(program.name, call.lineno, how)
    return None


def _cli_several(call: ast.Call, words: tuple[str, ...]) -> bool:
    """The command's --trainer.devices, else trainer_defaults' devices, else "auto"."""
    for index, word in enumerate(words):
        option, equals, value = word.partition("=")
        if option in ("--trainer.devices", "--trainer.gpus"):
            value = value if equals else (words[index + 1] if index + 1 < len(words) else "")
            return value.strip("'\"[]") not in ("1", "0")
    defaults = next((k.value for k in call.keywords if k.arg == "trainer_defaults"), None)
    if isinstance(defaults, ast.Dict):
        for key, value in zip(defaults.keys, defaults.values, strict=True):
            if isinstance(key, ast.Constant) and key.value in ("devices", "gpus"):
                return _devices_several(value)
    elif isinstance(defaults, ast.Call) and getattr(defaults.func, "id", "") == "dict":
        return _lightning_several(defaults)  # dict(devices=1): the Trainer's keywords
    return True  # "auto", or a config file: every visible GPU as far as the files say


def _sharding(value: ast.AST) -> bool:
    return isinstance(value, ast.Constant) and value.value in SHARDING_MAPS
