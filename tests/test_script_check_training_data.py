"""Check my script: where training reads its data, network storage or the node's own."""

import pytest

from guidance.engine.script_check import check_script
from guidance.engine.script_check.findings import Basis, Severity
from tests.engine_helpers import cluster, codes, note
from tests.script_check_helpers import checked, job

STAGED = "rsync -a /project/def-me/data $SLURM_TMPDIR/\n"
EVERY_NODE = "srun --ntasks=$SLURM_NNODES --ntasks-per-node=1"


@pytest.mark.parametrize(
    ("slug", "body"),
    [
        ("narval", "python train.py --data /project/def-me/d\n"),
        ("narval", "python train.py --data ~/projects/def-me/d\n"),
        ("narval", "python train.py --data=$HOME/projects/def-me/d\n"),
        ("narval", "python train.py /scratch/me/d\n"),
        ("narval", "python train.py --data $SCRATCH/d\n"),
        ("narval", "DATA=/project/d\nexport OUT=$SLURM_TMPDIR\npython train.py --data $DATA\n"),
        ("narval", 'DATA="${HOME}/projects/d"\nsrun python train.py "$DATA"\n'),
        ("narval", "python finetune.py data.path=/project/d\n"),
        ("narval", "python -m mypkg.train /project/d\n"),
        ("narval", "python main.py fit --data /project/d\n"),
        ("narval", "python train.py \\\n    --data /project/def-me/d \\\n    --epochs 10\n"),
        ("processing", "python train.py --data /project/d\n"),
    ],
)
def test_training_from_network_storage_is_flagged(slug, body):
    assert "training_from_network" in codes(checked(job("--time=60", body=body), slug))


@pytest.mark.parametrize(
    ("slug", "body"),
    [
        # $SCRATCH is the node's own SSD on the processing cluster (000): the right place.
        ("processing", "python train.py --data $SCRATCH/training_data\n"),
        ("processing", "rsync -a --delete ~/data $SCRATCH\npython train.py --data ~/data\n"),
        ("narval", STAGED + "python train.py --data $SLURM_TMPDIR/data\n"),
        ("narval", "cp -r /project/d $SLURM_TMPDIR\npython train.py --data $SLURM_TMPDIR/d\n"),
        (
            "narval",
            "cd $SLURM_TMPDIR && tar xf ~/projects/d.tar\npython train.py $SLURM_TMPDIR/d\n",
        ),
        (
            "narval",
            f"{EVERY_NODE} tar xf /project/d.tar -C$SLURM_TMPDIR\npython train.py $SLURM_TMPDIR/d",
        ),
        # Staged from one place; a network path the program is given for something else.
        ("narval", STAGED + "python train.py $SLURM_TMPDIR/data /scratch/me/runs\n"),
        # Inference may read from the network (000); a folder named train is no training.
        ("narval", "python infer.py --data /project/d\n"),
        ("narval", "python evaluate.py --data /project/train\n"),
        # Outputs, configuration and the program itself are not the training data.
        ("narval", "python train.py $SLURM_TMPDIR/d --output_dir ~/scratch/o --config ~/c.yaml\n"),
        ("narval", "python /project/def-me/code/train.py $SLURM_TMPDIR/d\n"),
        ("narval", "echo training on /project/d\n"),
        ("narval", "python train.py --data data/\n"),  # relative: cannot tell
    ],
)
def test_staged_or_local_training_data_is_fine(slug, body):
    assert "training_from_network" not in codes(checked(job("--time=60", body=body), slug))


@pytest.mark.parametrize(
    "body",
    [
        "cp -r /project/d $SLURM_TMPDIR\npython train.py --data /project/d\n",
        "cd $SLURM_TMPDIR && tar xf ~/projects/d.tar\npython train.py /project/d\n",
        f"{EVERY_NODE} tar xf /project/d.tar -C$SLURM_TMPDIR\npython train.py /project/d",
        # Decompressed by hand, into a file on the node (a redirection's target is a word too).
        "xz -dc /project/d.tar.xz > $SLURM_TMPDIR/d.tar\npython train.py /project/d\n",
        "bunzip2 -c /project/d.tar.bz2 >$SLURM_TMPDIR/d.tar\npython train.py /project/d",
        "unzstd /project/d.tar.zst -o $SLURM_TMPDIR/d.tar\npython train.py /project/d\n",
    ],
)
def test_data_copied_to_the_node_but_read_from_the_original_is_flagged(body):
    found = note(checked(job("--time=60", body=body)), "training_from_network")
    assert "still reads the copy's source" in found.message


def test_the_training_note_names_the_tier_and_where_to_copy():
    body = "python train.py --data /project/def-me/d\n"
    found = note(checked(job("--time=60", body=body)), "training_from_network")
    assert "/project (Project," in found.message
    assert "$SLURM_TMPDIR" in found.fix
    assert found.lines == (6,)


# --- The script as bash runs it: the data's path reaches the program through the shell.

DATA = "/project/def-me/imagenet"


@pytest.mark.parametrize(
    "body",
    [
        f"DATA=${{DATA:-{DATA}}}\npython train.py --data $DATA\n",
        f": ${{DATA:={DATA}}}\npython train.py --data $DATA\n",
        f"DATA=${{1:-{DATA}}}\npython train.py --data_dir=${{DATA}}\n",
        "ROOT=$SCRATCH/run\nDATA=$ROOT/data\npython train.py --data $DATA\n",
        f"DATA={DATA}\nDATA_DIR=$DATA python train.py\n",
        f"export DATASET_ROOT={DATA}\nsrun python train.py --epochs 90\n",
        f"export APPTAINER_BIND={DATA}:/data\napptainer exec --nv img.sif python train.py /data\n",
        f"D={DATA}\napptainer exec --nv -B $D:/data img.sif python train.py --data /data/train\n",
        f"apptainer exec --nv -B {DATA}:/d --env DATA_DIR=/d img.sif python train.py\n",
        f"export APPTAINERENV_DATA_ROOT=/d\nsingularity exec -B {DATA}:/d i.sif python train.py\n",
        # Started by a launcher: srun's own options, then the container's binds.
        f"srun --ntasks=1 apptainer exec --nv -B {DATA}:/data i.sif python train.py --data /data\n",
        f"srun -n 1 -c 8 singularity exec -B {DATA}:/d --nv i.sif python train.py --root /d\n",
    ],
)
def test_a_network_path_reaching_the_program_through_variables_is_flagged(body):
    found = note(checked(job("--time=60", body=body)), "training_from_network")
    assert "shared network storage" in found.message


@pytest.mark.parametrize(
    "body",
    [
        # A default that the script replaces, and a variable that points at the copy.
        f"DATA=$SLURM_TMPDIR/data\nrsync -a {DATA}/ $DATA\npython train.py --data $DATA\n",
        f"DATA={DATA}\ncp -r $DATA $SLURM_TMPDIR/\nDATA=$SLURM_TMPDIR/imagenet\n"
        "python train.py --data $DATA\n",
        f"DATA=${{SLURM_TMPDIR:-/tmp}}/d\ntar xf {DATA}.tar -C $SLURM_TMPDIR\n"
        "python train.py --data $DATA\n",
        # The program is given the copy; the exported original is not what it reads.
        f"export DATA_SRC={DATA}\nrsync -a $DATA_SRC/ $SLURM_TMPDIR/d\n"
        "python train.py --data $SLURM_TMPDIR/d\n",
        # The source and the copy both exported: the program is taken to read the copy.
        f"export DATA_SOURCE={DATA} DATA_PATH=$SLURM_TMPDIR/d\n"
        'rsync -a "$DATA_SOURCE/" "$DATA_PATH"\nbash -c "torchrun train.py"\n',
        # A container's program given the copy through its environment.
        f"tar xf {DATA}.tar -C $SLURM_TMPDIR\n"
        "apptainer exec --nv -B $SLURM_TMPDIR:/d --env DATA_DIR=/d/imagenet i.sif python train.py",
        f"tar xf {DATA}.tar -C $SLURM_TMPDIR\n"
        "srun apptainer exec --nv -B $SLURM_TMPDIR/imagenet:/d i.sif python train.py --data /d",
        # The image and its bind on network storage are not the training data.
        "srun apptainer exec --nv -B /project/def-me/code:/code /project/def-me/i.sif "
        "python /code/train.py --data $SLURM_TMPDIR/d",
        # A subshell that stages, and a program given the copy's full path.
        f"( cd $SLURM_TMPDIR && tar xf {DATA}.tar )\n"
        "python train.py --data $SLURM_TMPDIR/imagenet\n",
        # cd of the job itself: relative paths are read on the node.
        f"cd $SLURM_TMPDIR\ntar xf {DATA}.tar\npython ~/code/train.py --data imagenet\n",
        # Relative words that are no folder: a number, a subcommand's argument.
        f"( cd $SLURM_TMPDIR && tar xf {DATA}.tar )\npython train.py --epochs 90 $SLURM_TMPDIR/i\n",
    ],
)
def test_variables_that_point_at_the_copy_are_fine(body):
    found = codes(checked(job("--time=60", body=body)))
    assert not {"training_from_network", "staging_source_unset"} & found


def test_a_cd_inside_a_subshell_ends_with_it():
    body = (
        "cd $SLURM_SUBMIT_DIR\n"
        f"( cd $SLURM_TMPDIR && tar xf {DATA}.tar )\n"
        "python train.py --data imagenet/train\n"
    )
    found = note(checked(job("--time=60", body=body)), "training_from_network")
    assert "ran inside ( ... )" in found.message
    assert found.lines == (8, 7)
    assert "$SLURM_TMPDIR/imagenet/train" in found.fix


def test_a_cd_back_after_the_subshell_still_reads_outside_the_copy():
    body = (
        f"( cd $SLURM_TMPDIR && tar xf {DATA}.tar )\n"
        "cd $SLURM_SUBMIT_DIR\n"
        "python train.py --data imagenet/\n"
    )
    found = note(checked(job("--time=60", body=body)), "training_from_network")
    assert "reads imagenet in $SLURM_SUBMIT_DIR, not in $SLURM_TMPDIR" in found.message


def test_a_subshell_over_several_lines_ends_with_its_closing_parenthesis():
    body = f"(\n  cd $SLURM_TMPDIR\n  tar xf {DATA}.tar\n)\npython train.py --data ./imagenet\n"
    assert "training_from_network" in codes(checked(job("--time=60", body=body)))


def test_a_misspelt_staging_source_is_flagged_with_the_name_meant():
    body = (
        f"DATASET={DATA}\n"
        "rsync -a $DATSET/ $SLURM_TMPDIR/data\n"
        "python train.py --data $SLURM_TMPDIR/data\n"
    )
    result = check_script(job("--time=60", body=body), cluster("narval"))
    found = note(result.notes, "staging_source_unset")
    assert found.severity == Severity.FAILS
    assert "$DATSET is never set" in found.message and "$DATASET" in found.fix
    assert found.lines == (7,)
    assert "rsync -a $DATASET/ $SLURM_TMPDIR/data" in result.fixed


def test_a_staging_source_nothing_sets_is_a_question():
    body = "tar xf $ARCHIVE -C $SLURM_TMPDIR\npython train.py --data $SLURM_TMPDIR/d\n"
    found = note(checked(job("--time=60", body=body)), "staging_source_unset")
    assert found.severity == Severity.WASTES
    assert "unless you export it before calling sbatch" in found.message


@pytest.mark.parametrize(
    "body",
    [
        # Set by the site, by Slurm, by a loop, or by a file the script sources.
        "rsync -a $SCRATCH/d/ $SLURM_TMPDIR/d\npython train.py $SLURM_TMPDIR/d\n",
        "cp -r $SLURM_SUBMIT_DIR/d $SLURM_TMPDIR\npython train.py $SLURM_TMPDIR/d\n",
        "for f in a b; do tar xf $f.tar -C $SLURM_TMPDIR; done\npython train.py $SLURM_TMPDIR/a\n",
        "source ./paths.sh\nrsync -a $DATA_ROOT/ $SLURM_TMPDIR/d\npython train.py $SLURM_TMPDIR/d",
        "DATA=${DATA:-/project/d}\nrsync -a $DATA/ $SLURM_TMPDIR/d\npython train.py $SLURM_TMPDIR",
    ],
)
def test_staging_sources_set_elsewhere_are_fine(body):
    assert "staging_source_unset" not in codes(checked(job("--time=60", body=body)))


# --- The data path the program falls back on -----------------------------------------------

NO_DATA_PATH = (
    "#!/bin/bash\n#SBATCH --account=def-someuser\n#SBATCH --gres=gpu:1\n"
    "#SBATCH --cpus-per-task=12 --mem=124500M\n#SBATCH --time=0-03:00\n"
    "python train.py --epochs 10\n"
)
DEFAULT_ON_PROJECT = (
    "import argparse\nparser = argparse.ArgumentParser()\n"
    "parser.add_argument('--data', default='/project/def-someuser/imagenet')\n"
)


def _program_notes(program: dict[str, str] | None, text: str = NO_DATA_PATH):
    return check_script(text, cluster("narval"), program=program).notes


def test_a_data_option_defaulting_to_network_storage_is_where_the_job_reads():
    found = note(_program_notes({"train.py": DEFAULT_ON_PROJECT}), "training_from_network")
    assert found.basis == Basis.PROGRAM
    assert "/project/def-someuser/imagenet" in found.message
    assert "train.py, line 3" in found.message


@pytest.mark.parametrize(
    "program",
    [
        # The command line gives the option: the script's path is judged instead.
        None,
        {"train.py": DEFAULT_ON_PROJECT.replace("/project/def-someuser", "$SLURM_TMPDIR")},
        {"train.py": DEFAULT_ON_PROJECT.replace("'--data'", "'--output-dir'")},
    ],
)
def test_no_default_on_network_storage_is_no_finding(program):
    assert "training_from_network" not in codes(_program_notes(program))


def test_a_data_option_the_command_gives_is_not_the_default():
    text = NO_DATA_PATH.replace("--epochs 10", "--epochs 10 --data $SLURM_TMPDIR/imagenet")
    notes = _program_notes({"train.py": DEFAULT_ON_PROJECT}, text)
    assert "training_from_network" not in codes(notes)


def test_a_folder_the_program_names_itself_counts_too():
    program = {"train.py": "from torchvision import datasets\nDATA_ROOT = '/scratch/me/cifar'\n"}
    found = note(_program_notes(program), "training_from_network")
    assert "a folder it names itself" in found.message


@pytest.mark.parametrize(
    ("files", "path"),
    [
        (
            {
                "train.py": "from dataclasses import dataclass\n@dataclass\nclass Config:\n"
                "    data_dir: str = '/project/def-someuser/coco'\n"
            },
            "/project/def-someuser/coco",
        ),
        (
            {"train.py": "from pathlib import Path\nDATA = Path('/project/def-someuser') / 'x'\n"},
            "/project/def-someuser/x",
        ),
        (
            {
                "train.py": "import os\nparser.add_argument('--data-dir', "
                "default=os.path.join('/project/def-someuser', 'imagenet'))\n"
            },
            "/project/def-someuser/imagenet",
        ),
        (
            {"train.py": "user = 'me'\ndataset_root = f'/scratch/{user}/cifar'\n"},
            "/scratch/{...}/cifar",
        ),
        (
            {"train.py": "import os\nDATA_DIR = os.environ.get('DATA_DIR', '/project/def-x/d')\n"},
            "/project/def-x/d",
        ),
        (
            {
                "config.py": "import os\nBASE = '/project/def-someuser'\n"
                "DATA_ROOT = os.path.join(BASE, 'shared', 'inat')\n",
                "train.py": "import argparse\nfrom config import DATA_ROOT\n"
                "p = argparse.ArgumentParser()\np.add_argument('--root', default=DATA_ROOT)\n",
            },
            "/project/def-someuser/shared/inat",
        ),
        (
            {
                "settings/paths.py": "CLIPS = '/project/def-someuser/audio'\n",
                "train.py": "from settings import paths\nds = Clips(root=paths.CLIPS)\n",
            },
            "/project/def-someuser/audio",
        ),
    ],
)
def test_a_data_path_the_program_builds_is_followed(files, path):
    found = note(_program_notes(files), "training_from_network")
    assert path in found.message
    assert found.basis == Basis.PROGRAM


@pytest.mark.parametrize(
    "files",
    [
        # Where the program writes, not what it reads.
        {"train.py": "from pathlib import Path\noutput_dir = Path('/project/def-x') / 'runs'\n"},
        {"train.py": "import os\nCHECKPOINT_DIR = os.path.join('/project/def-x', 'ckpt')\n"},
        # A name assigned twice, and a fallback that is not a path.
        {"train.py": "BASE = '/project/def-x/a'\nBASE = '/tmp/b'\nds = D(root=BASE)\n"},
        {"train.py": "import os\ndata_dir = os.environ.get('DATA_DIR', 'data')\n"},
    ],
)
def test_outputs_and_unsure_values_are_not_data_paths(files):
    assert "training_from_network" not in codes(_program_notes(files))


def test_an_environment_fallback_the_job_replaces_is_not_where_it_reads():
    program = {"train.py": "import os\nroot = os.environ.get('CLIPS', '/project/def-x/clips')\n"}
    assert "training_from_network" in codes(_program_notes(program))
    for setting in ("export CLIPS=$SLURM_TMPDIR/clips\n", "CLIPS=$SLURM_TMPDIR/clips "):
        text = NO_DATA_PATH.replace("python train.py", setting + "python train.py")
        assert "training_from_network" not in codes(_program_notes(program, text)), setting
