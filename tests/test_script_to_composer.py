"""A pasted script as the composer's fields (jobs/compose/from_script.py): what each #SBATCH line
and command becomes, what the form is left to default, and what is named as not carried over."""

import pytest

from jobs.compose.forms import ComposeForm
from jobs.compose.from_script import carry, composer_query
from tests.engine_helpers import cluster
from tests.script_check_helpers import GOOD


def _values(*directives: str, body: str = "python train.py\n", slug: str = "narval") -> dict:
    return _carried(*directives, body=body, slug=slug).values


def _carried(*directives: str, body: str = "python train.py\n", slug: str = "narval"):
    text = "#!/bin/bash\n" + "".join(f"#SBATCH {d}\n" for d in directives) + body
    return carry(text, cluster(slug))


@pytest.mark.parametrize(
    ("directives", "expected"),
    [
        (["--gres=gpu:1"], {"gpu_count": "1"}),
        (["--gres=gpu:a100:2"], {"gpu_type": "a100", "gpu_count": "2", "multi_gpu": "on"}),
        (["--gres=gpu:A100:1"], {"gpu_type": "a100", "gpu_count": "1"}),  # as Slurm writes it
        (["--gres=gpu"], {"gpu_count": "1"}),
        (["--nodes=2", "--gres=gpu:4"], {"nodes": "2", "gpu_count": "8", "multi_gpu": "on"}),
        (["-N 2", "--gpus-per-node=a100:4"], {"nodes": "2", "gpu_count": "8", "gpu_type": "a100"}),
        (["--gpus=3"], {"gpu_count": "3", "multi_gpu": "on"}),
        (["--ntasks=4", "--gpus-per-task=1"], {"gpu_count": "4", "multi_gpu": "on"}),
        (["--nodes=2-4", "--gres=gpu:1"], {"nodes": "2", "gpu_count": "2", "multi_gpu": "on"}),
    ],
)
def test_the_gpus_asked_for_become_type_count_and_nodes(directives, expected):
    values = _values(*directives)
    assert values.items() >= expected.items()
    if "gpu_type" not in expected:
        assert "gpu_type" not in values  # the composer recommends one
    if int(expected["gpu_count"]) == 1 and "nodes" not in expected:
        assert "multi_gpu" not in values


def test_a_gpu_type_the_cluster_lacks_is_named_not_carried():
    carried = _carried("--gres=gpu:v100:1")
    assert "gpu_type" not in carried.values
    assert carried.values["gpu_count"] == "1"
    assert any("“v100”" in item and "Narval does not publish" in item for item in carried.left_out)


@pytest.mark.parametrize(
    ("time", "hours"),
    [
        ("0-03:00", "3"),  # D-HH:MM
        ("1-12:00", "36"),
        ("2-00:00:00", "48"),  # D-HH:MM:SS
        ("02:30:00", "2.5"),  # HH:MM:SS
        ("90", "1.5"),  # minutes
        ("100", "1.666666667"),
        ("45:00", "0.75"),  # MM:SS
        ("1:30", "0.03333333333"),  # MM:SS: Slurm rounds 90 seconds up to 2 minutes
    ],
)
def test_the_time_limit_becomes_the_duration_in_hours(time, hours):
    assert _values(f"--time={time}")["hours"] == hours


@pytest.mark.parametrize("time", ["UNLIMITED", "soon", "0"])
def test_a_time_without_a_duration_is_left_to_the_user(time):
    carried = _carried(f"--time={time}")
    assert "hours" not in carried.values
    assert any(f"--time={time}" in item for item in carried.left_out)


def test_an_array_one_at_a_time_is_a_checkpointed_chain_of_their_total_time():
    values = _values("--time=24:00:00", "--array=1-4%1")
    assert values["checkpointing"] == "on"
    assert values["hours"] == "96"


def test_an_array_of_parallel_runs_counts_as_similar_runs_and_is_named():
    carried = _carried("--time=1:00:00", "--array=0-9")
    assert carried.values["similar_runs"] == "10"
    assert carried.values["hours"] == "1"
    assert "checkpointing" not in carried.values
    assert any("--array=0-9" in item for item in carried.left_out)


def test_the_job_name_account_memory_and_cpus_are_carried():
    values = _values(
        "--job-name=resnet", "-A def-someuser", "--mem=64G", "--cpus-per-task=12", "-p a100"
    )
    expected = {
        "job_name": "resnet",
        "account": "def-someuser",
        "memory": "64G",
        "cpus_per_task": "12",
        "partition": "a100",
    }
    assert values.items() >= expected.items()


@pytest.mark.parametrize(
    ("directive", "field", "named"),
    [
        ('--job-name="my job"', "job_name", "--job-name=my job"),
        ("--mem=0", "memory", "--mem=0"),
        ("--mem=lots", "memory", "--mem=lots"),
        ("--cpus-per-task=0", "cpus_per_task", "--cpus-per-task=0"),
        ("--partition=gpubase_bygpu_b3", "partition", "--partition=gpubase_bygpu_b3"),
    ],
)
def test_a_value_the_form_would_refuse_is_named_instead(directive, field, named):
    carried = _carried(directive)
    assert field not in carried.values
    assert any(named in item for item in carried.left_out)


def test_the_partition_is_found_on_the_cluster_whatever_its_case():
    assert _values("--partition=A6000", slug="processing")["partition"] == "a6000"


def test_options_the_composer_writes_itself_are_named():
    carried = _carried("--output=%x-%j.out", "--mail-type=END", "--gres=gpu:1")
    assert "the #SBATCH options --mail-type, --output: the composer writes its own" in (
        carried.left_out
    )


@pytest.mark.parametrize(
    ("body", "command"),
    [
        ("python train.py --epochs 10\n", "python train.py --epochs 10"),
        ("torchrun --standalone \\\n  train.py\necho done\n", "torchrun --standalone train.py"),
        ("srun python train.py\n", "srun python train.py"),
        ("python prep.py\nOMP_NUM_THREADS=6 python3 run.py\n", "OMP_NUM_THREADS=6 python3 run.py"),
        ("./run_model --fast\n", "./run_model --fast"),
    ],
)  # fmt: skip
def test_the_last_line_that_runs_a_program_is_the_command(body, command):
    assert _values(body=body)["command"] == command


def test_a_script_that_runs_no_program_sets_no_command():
    carried = _carried(body="echo hello\n")
    assert "command" not in carried.values
    assert any("echo hello" in item for item in carried.left_out)


def test_modules_and_the_virtualenv_go_to_their_fields_and_the_staging_is_named():
    carried = carry(GOOD, cluster("narval"))
    expected = {
        "modules": "python/3.6 cuda cudnn",
        "environment": "venv",
        "environment_path": "~/my_env",
        "command": "python $SOURCEDIR/train.py $SLURM_TMPDIR/data",
        "hours": "3",
        "account": "def-someuser",
    }
    assert carried.values.items() >= expected.items()
    said = " ".join(carried.left_out)
    assert "SOURCEDIR=~/ml-test, which the command uses" in said
    assert "tar xf ~/projects/def-xxxx/data.tar" in said


def test_modules_on_a_site_without_a_module_command_are_named_not_carried():
    carried = _carried(body="module load cuda\npython train.py\n", slug="processing")
    assert "modules" not in carried.values
    assert any("the modules (cuda)" in item for item in carried.left_out)


def test_module_lines_with_a_variable_are_named_not_carried():
    carried = _carried(body="module load $CUDA_MODULE\npython train.py\n")
    assert "modules" not in carried.values
    assert any("not all of them are module names" in item for item in carried.left_out)


def test_a_virtualenv_under_a_variable_the_site_does_not_set_is_named_not_carried():
    body = "source $SLURM_TMPDIR/env/bin/activate\npython train.py\n"
    carried = _carried(body=body, slug="processing")
    assert "environment_path" not in carried.values
    assert any("have no $SLURM_TMPDIR" in item for item in carried.left_out)


def test_the_link_fills_in_the_forms_defaults_under_the_scripts_values():
    query = composer_query(carry(GOOD, cluster("narval")))
    assert query["job_name"] == "train"  # the form's own default: the script names none
    assert query["workload"] == "training"
    assert query["environment"] == "venv"  # the script's, over the form's default
    assert query["cluster"] == "narval"


@pytest.mark.parametrize(
    "directives",
    [
        ["--gres=gpu:a100:4", "--nodes=2", "--time=1-00:00", "--array=1-3%1", "--job-name=big"],
        ["--gpus-per-node=2", "--time=90", "--mem=64000M", "--cpus-per-task=12", "-p a100"],
        ["--gres=gpu:1", "--time=02:00:00", "--account=def-someuser"],
    ],
)
def test_the_composer_takes_every_value_carried(seeded, directives):
    body = "module load python/3.11\nsource ~/env/bin/activate\ntorchrun train.py\n"
    query = composer_query(_carried(*directives, body=body))
    form = ComposeForm(query | {"dataset_gb": "50"})  # which no script says
    assert form.is_valid(), form.errors
    assert {k: str(form.data[k]) for k in query} == query
