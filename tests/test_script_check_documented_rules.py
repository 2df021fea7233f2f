"""Check my script knows the documents' rules: one test per gap a trial with published-style
scripts found (memory, software installs, Anaconda, CPUs, arrays, what it cannot see, the
local-SSD site, word matching, refused options, node limits, containers, other storage names),
and each finding names its lines and, where the fix is mechanical, the fixed script."""

import subprocess

import pytest

from guidance.engine import sources
from guidance.engine.script_check import Basis, Severity, check_script
from guidance.facts import cluster_facts
from guidance.models import Cluster, SiteRule
from tests.engine_helpers import cluster, codes, note
from tests.script_check_helpers import checked

SOUND = """\
#!/bin/bash
#SBATCH --account=def-someuser
#SBATCH --time=0-03:00
"""


def script(*directives: str, body: str = "python train.py --data $SLURM_TMPDIR/d\n") -> str:
    """A script sound on the federation but for the directives and commands a test gives."""
    return SOUND + "".join(f"#SBATCH {d}\n" for d in directives) + body


ONE_GPU = ("--gres=gpu:1", "--cpus-per-task=6")
FOUR_GPUS = ("--gres=gpu:4", "--cpus-per-task=24")


# --- Memory, in every form Slurm takes, against each site's share per GPU (002) -------------


@pytest.mark.parametrize(
    ("slug", "directives"),
    [
        ("cedar", (*FOUR_GPUS, "--mem=192000M")),  # 48000M a GPU, Cedar gives 32000M
        ("cedar", (*ONE_GPU, "--mem-per-cpu=8G")),  # 6 x 8 GB
        ("beluga", ("--gres=gpu:1", "--cpus-per-task=6", "--mem-per-gpu=80G")),
        ("graham", ("--gpus-per-node=2", "--cpus-per-task=12", "--mem=200G")),
    ],
)
def test_memory_over_the_sites_share_per_gpu_is_flagged(slug, directives):
    found = note(checked(script(*directives), slug), "memory_over_share")
    share = cluster(slug).policy.memory_per_gpu_mb
    assert f"{share:,}M per GPU" in found.message
    assert found.source == sources.SBATCH_ELEMENTS
    assert found.severity == Severity.WASTES


@pytest.mark.parametrize(
    ("slug", "share"), [("cedar", "32,000M"), ("beluga", "47,000M"), ("graham", "64,000M")]
)
def test_each_sites_share_is_its_own(slug, share):
    directives = ("--gres=gpu:1", "--cpus-per-task=6", "--mem=100G")
    assert share in note(checked(script(*directives), slug), "memory_over_share").message


@pytest.mark.parametrize("whole", ["--mem=0", "--exclusive"])
def test_the_whole_node_for_one_gpu_is_flagged(whole):
    found = note(checked(script(*ONE_GPU, whole), "narval"), "whole_node")
    assert "other 3 sit idle" in found.message


def test_memory_within_the_share_and_the_whole_node_for_all_its_gpus_pass():
    assert codes(checked(script(*ONE_GPU, "--mem=32000M"), "cedar")) == set()
    whole = ("--gres=gpu:4", "--exclusive", "--mem=0", "--cpus-per-task=48")
    body = "torchrun --nproc_per_node=4 train.py --data $SLURM_TMPDIR/d\n"
    assert codes(checked(script(*whole, body=body), "narval")) == set()


# --- Software: no internet on the federation's compute nodes, virtualenv not Anaconda -------


def test_pip_install_from_the_internet_is_flagged_and_fixed():
    text = script(*ONE_GPU, body="pip install torch timm\npython train.py $SLURM_TMPDIR/d\n")
    result = check_script(text, cluster("narval"))
    found = note(result.notes, "needs_internet")
    assert found.severity == Severity.FAILS and found.lines == (6,)
    assert found.source == sources.INTERACTIVE_FIRST
    assert "pip install --no-index torch timm" in result.fixed
    sound = text.replace("pip install", "pip install --no-index")
    assert codes(checked(sound, "narval")) == set()


def test_conda_on_the_federation_is_advised_against():
    text = script(*ONE_GPU, body="conda activate torch\npython train.py $SLURM_TMPDIR/d\n")
    found = note(checked(text, "graham"), "anaconda")
    assert found.source == sources.AVOID_ANACONDA
    assert found.severity == Severity.ADVICE


# Conda in the forms that do not say "conda activate": the environment's own bin/activate, its
# folder through a variable, its interpreter, PATH, conda-pack, and the other front ends.
CONDA_FORMS = [
    ("source ~/miniconda3/bin/activate torch\n", (6,)),
    ("source ~/miniconda3/envs/torch/bin/activate\n", (6,)),
    ("ENV=$HOME/anaconda3/envs/seg\nsource $ENV/bin/activate\n", (7,)),
    (". ~/.conda/envs/torch/bin/activate\n", (6,)),
    ("conda run -n torch --no-capture-output true\n", (6,)),
    ('eval "$(conda shell.bash hook)"\n', (6,)),
    ('eval "$(micromamba shell hook --shell bash)"\nmicromamba activate torch\n', (6, 7)),
    ("mamba activate torch\n", (6,)),
    ("export PATH=$HOME/miniforge3/bin:$PATH\n", (6,)),
    ("~/miniconda3/envs/torch/bin/python -c 'import torch'\n", (6,)),
    (
        "tar -xzf ~/envs/torch.tar.gz -C $SLURM_TMPDIR/env\nsource $SLURM_TMPDIR/env/bin/activate\n"
        "conda-unpack\n",
        (7, 8),
    ),
    (
        "tar xf ~/conda-torch.tar -C $SLURM_TMPDIR/env\nsource $SLURM_TMPDIR/env/bin/activate\n",
        (7,),
    ),
]


@pytest.mark.parametrize(("setup", "lines"), CONDA_FORMS)
def test_conda_in_every_form_is_advised_against_on_the_federation(setup, lines):
    text = script(*ONE_GPU, body=setup + "python train.py $SLURM_TMPDIR/d\n")
    found = note(checked(text, "beluga"), "anaconda")
    assert found.lines == lines
    assert found.source == sources.AVOID_ANACONDA


@pytest.mark.parametrize(("setup", "lines"), CONDA_FORMS)
def test_the_processing_cluster_publishes_no_conda_rule(setup, lines):
    text = f"#!/bin/bash\n#SBATCH --gres=gpu:rtx:1\n#SBATCH -t 60\n{setup}python t.py\n"
    assert "anaconda" not in codes(checked(text, "processing"))


@pytest.mark.parametrize(
    "setup",
    [
        "source ~/venv/bin/activate\n",
        "source ~/envs/torch/bin/activate\n",  # a folder named envs holds a virtualenv as well
        "ENV=$SLURM_TMPDIR/env\nvirtualenv --no-download $ENV\nsource $ENV/bin/activate\n",
        "tar xf ~/wheels.tar -C $SLURM_TMPDIR/w\nsource ~/venv/bin/activate\n",
        "apptainer exec --nv img.sif /opt/conda/bin/python -c 'import torch'\n",  # the image's
        "echo 'avoid source ~/miniconda3/bin/activate here'\n",
    ],
)
def test_a_virtualenv_is_not_taken_for_conda(setup):
    text = script(*ONE_GPU, body=setup + "python train.py $SLURM_TMPDIR/d\n")
    assert "anaconda" not in codes(checked(text, "beluga"))


# --- CPUs for the GPUs ---------------------------------------------------------------------


def test_one_cpu_for_four_gpus_is_asked_about_without_the_program():
    # Whether one CPU starves the GPUs hangs on the program's loader workers (test_script_check_
    # cpus.py reads them from the program); without it, a question that names the share.
    text = script("--gres=gpu:4", "--cpus-per-task=1", body="torchrun --nproc_per_node=4 t.py\n")
    found = note(checked(text, "narval"), "too_few_cpus")
    assert "1 CPU for 4 GPUs" in found.message
    assert "--cpus-per-task=48" in found.fix
    assert found.basis == Basis.QUESTION


# --- Slurm itself ---------------------------------------------------------------------------


def test_an_array_variable_without_an_array_is_flagged():
    body = "python train.py --seed $SLURM_ARRAY_TASK_ID $SLURM_TMPDIR/d\n"
    found = note(checked(script(*ONE_GPU, body=body), "cedar"), "array_task_id_without_array")
    assert found.severity == Severity.FAILS
    assert "array_task_id_without_array" not in codes(
        checked(script(*ONE_GPU, "--array=1-5", body=body), "cedar")
    )


@pytest.mark.parametrize(
    ("line", "code", "words"),
    [
        ("--mem= 150G", "missing_value", "--mem=150G"),
        ("--cpus=16", "unknown_option", "--cpus-per-gpu or --cpus-per-task"),
        ("--tim=2:00:00", "unknown_option", "--time or --time-min"),
        ("--ntaks-per-node=4", "unknown_option", "--ntasks-per-node"),
        ("--mem=16 GB", "unknown_option", "GB"),
    ],
)
def test_options_sbatch_refuses_are_named(line, code, words):
    found = note(checked(script(*ONE_GPU, line), "narval"), code)
    assert words in found.message + found.fix
    assert found.lines == (6,)


def test_a_script_with_no_command_is_flagged():
    assert "no_commands" in codes(checked(script(*ONE_GPU, body=""), "narval"))


# --- What the checker cannot see is said as such ---------------------------------------------


def test_work_in_another_script_is_not_called_idle_gpus():
    notes = checked(script(*FOUR_GPUS, body="bash exp/pretrain.sh\n"), "narval")
    assert "multi_gpu_without_launcher" not in codes(notes)
    assert note(notes, "multi_gpu_unseen").severity == Severity.ADVICE


@pytest.mark.parametrize(
    "body",
    [
        "python train.py --trainer.devices 4 $SLURM_TMPDIR/d\n",
        "python run_glue.py --per_device_train_batch_size 32 --data $SLURM_TMPDIR/d\n",
        "python - <<'EOF'\nimport torch\nmodel = torch.nn.DataParallel(model)\nEOF\n",
    ],
)
def test_frameworks_that_use_every_gpu_are_not_flagged(body):
    assert "multi_gpu_without_launcher" not in codes(checked(script(*FOUR_GPUS, body=body)))


@pytest.mark.parametrize(
    "body",
    [
        "torchrun --nproc_per_node 1 train.py $SLURM_TMPDIR/d\n",
        "srun python train.py $SLURM_TMPDIR/d\n",
    ],
)
def test_one_process_on_four_gpus_is_flagged(body):
    found = note(checked(script(*FOUR_GPUS, body=body)), "multi_gpu_without_launcher")
    assert found.lines == (4, 6)


# --- The local-SSD site has its own rules (000) ----------------------------------------------

PROCESSING = """\
#!/bin/bash
#SBATCH --gres=gpu:rtx:1
#SBATCH --time=3-00:00
rsync -a /project/d/ $SCRATCH/d/
python train.py --data $SCRATCH/d
"""


def test_the_local_ssd_site_is_not_held_to_the_federations_rules():
    assert codes(checked(PROCESSING, "processing")) == set()
    # The same script on the federation: account, CPUs and checkpoints, from its documents.
    assert {"no_account", "too_few_cpus", "long_without_checkpoints"} <= codes(
        checked(PROCESSING.replace("rtx:", ""), "cedar")
    )


# --- Words that decided too much --------------------------------------------------------------


def test_tars_progress_option_is_no_checkpointing():
    body = "tar -xf /project/d.tar --checkpoint=.50000 -C $SLURM_TMPDIR\npython train.py x\n"
    text = script(*ONE_GPU, body=body).replace("0-03:00", "3-00:00")
    assert "long_without_checkpoints" in codes(checked(text, "cedar"))


def test_the_interpreter_under_home_is_not_the_training_data():
    body = "PYTHON=/home/me/env/bin/python\nsrun $PYTHON train.py --data $SLURM_TMPDIR/d\n"
    assert codes(checked(script(*ONE_GPU, body=body), "narval")) == set()


# --- No GPU at all ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "slug", "words"),
    [
        (SOUND + "##SBATCH --gres=gpu:1\npython train.py $SLURM_TMPDIR/d\n", "narval", "line 4"),
        (
            "#!/bin/bash\n#SBATCH --partition=a6000\n#SBATCH -t 60\npython generate.py\n",
            "processing",
            "partition a6000",
        ),
    ],
)
def test_a_gpu_job_that_asks_for_no_gpu_is_flagged(text, slug, words):
    found = note(checked(text, slug), "no_gpu_requested")
    assert words in found.message
    assert found.severity == Severity.FAILS


def test_a_duplicate_gpu_request_is_flagged():
    text = script("--gres=gpu:v100:1", "--cpus-per-task=6", "--gres=gpu:1")
    found = note(checked(text, "graham"), "duplicate_gpu_request")
    assert found.lines == (4, 6)


# --- More than a node has ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("directives", "code"),
    [
        (("--nodes=1", "--gres=gpu:a100:8", "--cpus-per-task=48"), "gpus_over_node"),
        (("--gres=gpu:1", "--cpus-per-task=6", "--mem=5000000G"), "memory_over_node"),
        (("--gres=gpu:1", "--cpus-per-task=96"), "cpus_over_node"),
    ],
)
def test_more_than_a_node_has_would_fail(directives, code):
    assert note(checked(script(*directives), "narval"), code).severity == Severity.FAILS


# --- Storage under other names, containers, staging to the wrong place ------------------------


@pytest.mark.parametrize(
    ("slug", "body", "code"),
    [
        (
            "processing",
            "rsync -a /project/d /scratch-shared/me/\n"
            "python train.py --data /scratch-shared/me/d\n",
            "training_from_network",
        ),
        ("processing", "python train.py --data /mnt/nas/datasets/d\n", "training_from_network"),
        (
            "cedar",
            "apptainer exec --nv -B /project/def-me/d:/data img.sif python train.py --data /data\n",
            "training_from_network",
        ),
        (
            "cedar",
            "apptainer exec --nv docker://pytorch/pytorch python train.py $SLURM_TMPDIR/d\n",
            "needs_internet",
        ),
        (
            "narval",
            "tar xf /project/d.tar -C $SLURM_TMPDIR/data\npython train.py $SLURM_TMPDIR/imagenet\n",
            "reads_other_folder",
        ),
    ],
)
def test_storage_containers_and_staging(slug, body, code):
    directives = ("--gres=gpu:1", "--cpus-per-task=6") if slug != "processing" else ()
    assert code in codes(checked(script(*directives, body=body), slug))


@pytest.mark.parametrize("target", ["$LOCAL_SCRATCH", "$TMPDIR"])
def test_other_sites_node_local_folders_count_as_staging(target):
    body = f"rsync -a /project/d {target}/data/\npython train.py --data {target}/data/d\n"
    assert codes(checked(script(*ONE_GPU, body=body), "narval")) == set()
    elsewhere = body.replace("data/d", "imagenet")
    assert "reads_other_folder" in codes(checked(script(*ONE_GPU, body=elsewhere), "narval"))


# --- The fixed script -------------------------------------------------------------------------

MEMORY_AND_ACCOUNT = """\
#!/bin/bash
#SBATCH --gres=gpu:4
#SBATCH --cpus-per-task=24
#SBATCH --mem=192000M
#SBATCH --time=0-12:00
module load python/3.11
torchrun --nproc_per_node=4 train.py --data $SLURM_TMPDIR/d
"""


def test_the_fixed_script_for_memory_and_account_passes_the_checker_and_bash(tmp_path):
    result = check_script(MEMORY_AND_ACCOUNT, cluster("cedar"))
    assert codes(result.notes) == {"no_account", "memory_over_share"}
    assert note(result.notes, "memory_over_share").lines == (4,)
    assert "-#SBATCH --mem=192000M" in result.diff and "+#SBATCH --mem=128000M" in result.diff
    assert "+#SBATCH --account=def-yourgroup" in result.diff
    assert check_script(result.fixed, cluster("cedar")).notes == ()
    path = tmp_path / "fixed.sh"
    path.write_text(result.fixed)
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0


def test_the_users_own_account_goes_into_the_fixed_script():
    result = check_script(MEMORY_AND_ACCOUNT, cluster("cedar"), account="def-alice")
    assert "#SBATCH --account=def-alice" in result.fixed


# --- Where the site rules come from -------------------------------------------------------------


def test_a_clusters_page_lists_its_script_rules_with_their_sources(user_client, seeded):
    page = user_client.get("/guidance/cedar/").content.decode()
    assert "Rules for job scripts" in page
    assert "Avoid Anaconda: use virtualenv" in page
    assert "Compute nodes have no internet access" in page
    processing = user_client.get("/guidance/processing/").content.decode()
    assert "Rules for job scripts" not in processing


def test_a_rule_an_admin_removes_is_no_longer_applied(seeded):
    text = script("--gres=gpu:1", "--cpus-per-task=6", body="conda activate t\npython train.py x\n")
    cedar = Cluster.objects.with_facts().get(slug="cedar")
    assert "anaconda" in codes(check_script(text, cluster_facts(cedar)).notes)
    SiteRule.objects.filter(cluster__slug="cedar", rule="avoid_anaconda").delete()
    cedar = Cluster.objects.with_facts().get(slug="cedar")
    assert "anaconda" not in codes(check_script(text, cluster_facts(cedar)).notes)
