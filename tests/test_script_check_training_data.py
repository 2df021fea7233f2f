"""Check my script: where training reads its data, network storage or the node's own."""

import pytest

from tests.engine_helpers import codes, note
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
