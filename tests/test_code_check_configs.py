"""YAML configs beside a program: read with their lines, never run, never raising; composed as
Hydra composes them (defaults groups, `_self_`, packages, the command line's overrides); and
what the checkers then say of a Trainer or a datamodule that Hydra builds from them."""

import string

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from guidance.engine import Cluster, Policy
from guidance.engine.code_check import MAX_FILE_BYTES, check_code
from guidance.engine.code_check.beside_script import readable
from guidance.engine.code_check.configs import NotYaml, as_yaml, read_config
from guidance.engine.code_check.data_defaults import data_defaults
from guidance.engine.code_check.gpu_spread import spread_over_gpus, unsettled
from guidance.engine.code_check.hydra import compose
from guidance.engine.code_check.program import parse_program
from guidance.engine.script_check import check_script
from guidance.engine.script_check.findings import Basis, Severity
from tests.engine_helpers import cluster

DGX = Cluster(slug="dgx", name="DGX cluster", policy=Policy(cpus_per_gpu=16))
NARVAL = cluster("narval")

TRAIN = """\
import hydra


@hydra.main(version_base="1.3", config_path="configs", config_name="train")
def main(cfg):
    data = hydra.utils.instantiate(cfg.data)
    model = hydra.utils.instantiate(cfg.model)
    trainer = hydra.utils.instantiate(cfg.trainer)
    trainer.fit(model, datamodule=data)


main()
"""
DATA = """\
import lightning as L
from torch.utils.data import DataLoader


class Images(L.LightningDataModule):
    def __init__(self, data_dir="data/", num_workers=4):
        super().__init__()
        self.save_hyperparameters()

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=64, num_workers=self.hparams.num_workers,
                          pin_memory=True, persistent_workers=True, prefetch_factor=4)
"""
PRIMARY = """\
defaults:
  - data: images
  - trainer: gpu
  - _self_

paths:
  root: /project/def-lab/images
  data_dir: ${paths.root}/train
"""
TRAINER = """\
_target_: lightning.pytorch.Trainer
max_epochs: 10
devices: 4
precision: 32
"""
IMAGES = """\
_target_: data.Images
data_dir: ${paths.data_dir}
num_workers: 0
"""


def project(**changed: str) -> dict[str, str]:
    files = {
        "train.py": TRAIN,
        "data.py": DATA,
        "configs/train.yaml": PRIMARY,
        "configs/trainer/gpu.yaml": TRAINER,
        "configs/data/images.yaml": IMAGES,
    }
    return {**files, **changed}


def composed(files: dict[str, str], overrides: tuple[str, ...] = ()):
    beside = readable(files)
    return compose(beside, beside.configs, overrides)


# --- reading -----------------------------------------------------------------------------------


def test_it_reads_each_key_with_its_line():
    config = read_config("trainer.yaml", TRAINER)
    assert config.entries["precision"].spot.lineno == 4
    assert config.entries["devices"].value.value == "4"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a: [1, 2\nb: 3\n", 2),
        ("a: 1\n  b: 2\n", 2),
        ("- just\n- a list\n", 1),
        ("a: 1\n---\nb: 2\n", 2),
        ("a: *nowhere\n", 1),
    ],
)
def test_bad_yaml_is_said_in_words_with_its_line(text, line):
    with pytest.raises(NotYaml) as raised:
        read_config("bad.yaml", text)
    assert raised.value.line == line and raised.value.reason


def test_a_config_that_does_not_parse_is_unreadable_and_the_rest_is_still_checked():
    result = check_code(project(**{"configs/trainer/gpu.yaml": "devices: [4\n"}), DGX, "train.py")
    (unreadable,) = result.unreadable
    assert unreadable.file == "configs/trainer/gpu.yaml"
    assert "is not a YAML config" in unreadable.message and unreadable.line == 2
    assert "train.py" in result.files and "configs/data/images.yaml" in result.files


def test_python_only_tags_are_not_run():
    text = "_target_: !!python/object/apply:os.system ['touch /tmp/owned']\n"
    files = project(**{"configs/trainer/gpu.yaml": text})
    result = check_code(files, DGX, "train.py")  # never raises, never runs anything
    assert not any(f.file == "configs/trainer/gpu.yaml" for f in result.findings)


def test_anchors_that_multiply_a_tree_stay_bounded():
    lines = ["a0: &a0 [x, y, z, w, v, u, t, s, r, q]"]
    lines += [f"a{i}: &a{i} {{k1: *a{i - 1}, k2: *a{i - 1}, k3: *a{i - 1}}}" for i in range(1, 40)]
    config = read_config("bomb.yaml", "\n".join(lines) + "\n")
    assert len(config.entries) <= 5_000


def test_a_recursive_anchor_is_read_without_end():
    config = read_config("loop.yaml", "a: &a\n  b: *a\n")
    assert "a.b" in config.entries


def test_a_huge_config_is_refused_as_a_huge_python_file_is():
    text = "key: " + "x" * MAX_FILE_BYTES + "\n"
    result = check_code(project(**{"configs/data/images.yaml": text}), DGX, "train.py")
    (unreadable,) = result.unreadable
    assert unreadable.file == "configs/data/images.yaml" and "too large" in unreadable.message


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=string.printable + "äß€", max_size=300))
def test_any_text_reads_or_is_refused_in_words(text):
    try:
        read_config("any.yaml", text)
    except NotYaml as error:
        assert error.reason


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(
        st.booleans(),
        st.none(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=30),
    )
)
def test_a_value_written_as_yaml_reads_back_as_itself(value):
    assert yaml.safe_load(f"key: {as_yaml(value)}\n")["key"] == value


# --- composing ---------------------------------------------------------------------------------


def test_defaults_groups_come_from_their_folders_under_their_group():
    config = composed(project())
    assert config.value("trainer.devices").value == 4
    assert config.get("trainer.precision").file.name == "configs/trainer/gpu.yaml"
    assert config.value("data.num_workers").value == 0


def test_interpolations_are_followed_and_say_what_they_went_through():
    known = composed(project()).value("data.data_dir")
    assert known.value == "/project/def-lab/images/train"
    assert [s.path for s in known.through] == ["data.data_dir", "paths.data_dir", "paths.root"]


@pytest.mark.parametrize(
    "written",
    ["${hydra:runtime.cwd}/data", "${.sibling}", "${nowhere.at_all}", "${oc.decode:x}"],
)
def test_an_interpolation_it_cannot_follow_is_unknown(written):
    config = composed(project(**{"configs/data/images.yaml": f"data_dir: {written}\n"}))
    assert config.value("data.data_dir") is None


def test_an_environment_variable_is_kept_as_the_shell_writes_it():
    text = "_target_: data.Images\ndata_dir: ${oc.env:SCRATCH}/images\n"
    config = composed(project(**{"configs/data/images.yaml": text}))
    assert config.value("data.data_dir").value == "$SCRATCH/images"


def test_a_group_file_composes_its_own_defaults_and_self_comes_last():
    files = project(
        **{
            "configs/trainer/gpu.yaml": "defaults:\n  - base\n\ndevices: 2\n",
            "configs/trainer/base.yaml": TRAINER,
        }
    )
    config = composed(files)
    assert config.value("trainer.devices").value == 2
    assert config.value("trainer.precision").value == 32


def test_self_first_lets_the_groups_override_the_primary():
    primary = "defaults:\n  - _self_\n  - trainer: gpu\n\ntrainer:\n  devices: 1\n"
    config = composed(project(**{"configs/train.yaml": primary}))
    assert config.value("trainer.devices").value == 4


def test_a_global_package_puts_a_group_file_at_the_top():
    text = "# @package _global_\nseed: 3\n"
    primary = "defaults:\n  - extra: seeded\n"
    config = composed(project(**{"configs/train.yaml": primary, "configs/extra/seeded.yaml": text}))
    assert config.value("seed").value == 3 and config.get("extra.seed") is None


def test_the_command_line_chooses_a_group_and_overrides_a_key():
    files = project(**{"configs/trainer/cpu.yaml": "_target_: lightning.Trainer\ndevices: 1\n"})
    assert composed(files, ("trainer=cpu",)).value("trainer.devices").value == 1
    assert composed(files, ("trainer.devices=2",)).value("trainer.devices").value == 2
    assert composed(files, ("++trainer.devices=3",)).value("trainer.devices").value == 3


def test_uploads_without_their_folders_are_found_by_their_names():
    files = {name.rsplit("/", 1)[-1]: text for name, text in project().items()}
    assert composed(files).value("trainer.devices").value == 4


def test_a_file_given_twice_under_one_name_in_other_folders_is_not_guessed():
    files = project(**{"other/gpu.yaml": "devices: 8\n"})
    del files["configs/trainer/gpu.yaml"]
    assert composed(files).get("trainer.devices") is None


def test_without_hydra_main_nothing_is_composed():
    files = project(**{"train.py": TRAIN.replace("@hydra.main", "@other.main")})
    assert composed(files) is None


# --- what the code checker says ----------------------------------------------------------------


def findings(files: dict[str, str], rule: str):
    return [f for f in check_code(files, DGX, "train.py").findings if f.rule == rule]


def test_a_yaml_trainer_at_32_bit_is_a_change_on_its_yaml_line():
    (finding,) = findings(project(), "mixed_precision")
    assert (finding.file, finding.line, finding.kind) == ("configs/trainer/gpu.yaml", 4, "change")
    assert (finding.before, finding.after) == ("precision: 32", "precision: bf16-mixed")


def test_a_yaml_trainer_with_mixed_precision_is_left_alone():
    text = TRAINER.replace("precision: 32", "precision: bf16-mixed")
    assert not findings(project(**{"configs/trainer/gpu.yaml": text}), "mixed_precision")


def test_a_missing_key_is_added_below_target_at_its_indentation():
    primary = PRIMARY.replace("  - trainer: gpu\n", "") + (
        "trainer:\n  _target_: lightning.pytorch.Trainer\n  devices: 4\n"
    )
    (finding,) = findings(project(**{"configs/train.yaml": primary}), "mixed_precision")
    assert finding.file == "configs/train.yaml"
    assert finding.after.split("\n") == [
        "  _target_: lightning.pytorch.Trainer",
        "  precision: bf16-mixed",
    ]


def test_a_precision_from_an_interpolation_it_cannot_follow_is_a_question():
    text = TRAINER.replace("precision: 32", "precision: ${oc.decode:${oc.env:PREC}}")
    (finding,) = findings(project(**{"configs/trainer/gpu.yaml": text}), "mixed_precision")
    assert finding.kind == "question" and finding.file == "configs/trainer/gpu.yaml"


def test_num_workers_zero_in_the_datamodules_config_is_a_yaml_change():
    (finding,) = findings(project(), "dataloader_num_workers")
    assert (finding.file, finding.line, finding.kind) == ("configs/data/images.yaml", 3, "change")
    assert finding.after == "num_workers: 16"
    assert "data.num_workers=$SLURM_CPUS_PER_TASK" in finding.fix


def test_num_workers_left_out_of_the_config_is_the_constructors_default():
    text = IMAGES.replace("num_workers: 0\n", "")
    assert not findings(project(**{"configs/data/images.yaml": text}), "dataloader_num_workers")


def test_a_class_no_config_targets_keeps_its_question():
    text = IMAGES.replace("data.Images", "elsewhere.Images")
    (finding,) = findings(project(**{"configs/data/images.yaml": text}), "dataloader_num_workers")
    assert finding.kind == "question"


@settings(max_examples=60, deadline=None)
@given(
    indent=st.sampled_from(["  ", "    "]),
    written=st.sampled_from(["32", '"32"', "'32-true'", "32  # full", "64"]),
)
def test_every_yaml_fix_parses_and_keeps_the_keys_indentation(indent, written):
    primary = PRIMARY.replace("  - trainer: gpu\n", "") + (
        f"trainer:\n{indent}_target_: lightning.pytorch.Trainer\n{indent}precision: {written}\n"
    )
    files = project(**{"configs/train.yaml": primary})
    fixes = [
        f for f in check_code(files, DGX, "train.py").findings if f.file == "configs/train.yaml"
    ]
    assert fixes and all(f.after for f in fixes)
    for finding in fixes:
        lines = files[finding.file].split("\n")
        assert finding.before == "\n".join(lines[finding.line - 1 : finding.end_line])
        lines[finding.line - 1 : finding.end_line] = finding.after.split("\n")
        fixed = yaml.safe_load("\n".join(lines))
        assert fixed["trainer"]["_target_"] == "lightning.pytorch.Trainer"
        assert all(line.startswith(indent) for line in finding.after.split("\n"))


# --- what the script checker reads -------------------------------------------------------------


def test_a_yaml_trainer_over_several_devices_spreads_unless_the_command_says_one():
    beside = readable(project())
    assert spread_over_gpus(beside) is not None
    assert spread_over_gpus(beside, ("python", "train.py", "trainer.devices=1")) is None
    one = readable(project(**{"configs/trainer/gpu.yaml": TRAINER.replace("4", "1")}))
    assert spread_over_gpus(one) is None


def test_a_hydra_program_without_its_configs_is_a_question_never_one_gpu():
    # The Trainer is built from YAML that was not given: the files cannot say it uses one GPU.
    script = "#!/bin/bash\n#SBATCH --gres=gpu:4\n#SBATCH --time=1:00:00\npython train.py\n"
    for program in ({"train.py": TRAIN}, project()):
        assert (unsettled(readable(program)) == "") == (program != {"train.py": TRAIN})
    (alone,) = [
        n
        for n in check_script(script, NARVAL, program={"train.py": TRAIN}).notes
        if n.code == "multi_gpu_without_launcher"
    ]
    assert (alone.basis, alone.severity) == (Basis.QUESTION, Severity.ADVICE)
    assert "YAML configs that were not given" in alone.message and not alone.edits
    assert "Give its YAML configs beside it too" in alone.fix
    with_configs = check_script(script, NARVAL, program=project())
    assert "multi_gpu_without_launcher" not in [n.code for n in with_configs.notes]


def test_a_data_folder_in_the_config_is_a_default_the_command_can_override():
    (default,) = data_defaults(readable(project()))
    assert default.path == "/project/def-lab/images/train"
    assert (default.file, default.line) == ("configs/data/images.yaml", 2)
    assert default.options[-1] == "data.data_dir" and "paths.root" in default.options


def test_python_files_alone_read_as_before():
    beside = readable({"train.py": TRAIN})
    assert len(beside) == 1 and beside.configs == ()
    assert parse_program("train.py", TRAIN).name == beside[0].name


def test_a_yaml_trainer_on_data_parallel_is_a_change_to_ddp_in_its_yaml():
    text = TRAINER + "strategy: dp\n"
    (finding,) = findings(project(**{"configs/trainer/gpu.yaml": text}), "data_parallel")
    assert (finding.file, finding.line) == ("configs/trainer/gpu.yaml", 5)
    assert finding.after == "strategy: ddp"


def test_arguments_given_at_instantiate_win_over_the_config():
    train = TRAIN.replace("instantiate(cfg.data)", "instantiate(cfg.data, num_workers=8)")
    (finding,) = findings(project(**{"train.py": train}), "dataloader_num_workers")
    assert finding.kind == "question"


def test_an_argument_passed_to_instantiate_wins_over_the_yaml_trainers():
    train = TRAIN.replace("instantiate(cfg.trainer)", "instantiate(cfg.trainer, precision=prec)")
    (finding,) = findings(project(**{"train.py": train}), "mixed_precision")
    assert (finding.kind, finding.file, finding.line) == ("question", "train.py", 8)
    train = TRAIN.replace("instantiate(cfg.trainer)", "instantiate(cfg.trainer, logger=False)")
    (finding,) = findings(project(**{"train.py": train}), "mixed_precision")
    assert (finding.kind, finding.file) == ("change", "configs/trainer/gpu.yaml")


def test_a_data_folder_passed_to_instantiate_is_not_the_configs():
    train = TRAIN.replace("instantiate(cfg.data)", "instantiate(cfg.data, data_dir=args.data)")
    assert data_defaults(readable(project(**{"train.py": train}))) == []
