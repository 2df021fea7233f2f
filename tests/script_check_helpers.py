"""Shared by the script checker's tests: a good script, and scripts good but for one change."""

from guidance.engine.script_check import check_script
from tests.engine_helpers import cluster

# 002's example script, with the CPUs it suggests and an account: nothing to say about it.
GOOD = """\
#!/bin/bash
#SBATCH --gres=gpu:1       # Request GPU "generic resources"
#SBATCH --cpus-per-task=6  # Refer to cluster's documentation for the right CPU/GPU ratio
#SBATCH --mem=32000M       # Memory proportional to GPUs: 32000 Cedar, 47000 Beluga, 64000 Graham.
#SBATCH --time=0-03:00     # DD-HH:MM:SS
#SBATCH --account=def-someuser

module load python/3.6 cuda cudnn

SOURCEDIR=~/ml-test

# Prepare virtualenv
source ~/my_env/bin/activate
# You could also create your environment here, on the local storage ($SLURM_TMPDIR).

# Prepare data
mkdir $SLURM_TMPDIR/data
tar xf ~/projects/def-xxxx/data.tar -C $SLURM_TMPDIR/data

# Start training
python $SOURCEDIR/train.py $SLURM_TMPDIR/data
"""

HEADER = (
    "#!/bin/bash\n#SBATCH --account=def-someuser\n#SBATCH --gres=gpu:1\n#SBATCH --cpus-per-task=6\n"
)


def job(*directives: str, body: str = "python train.py $SLURM_TMPDIR/data\n") -> str:
    """A script that is good but for what the test changes."""
    lines = [f"#SBATCH {d}\n" for d in directives]
    return HEADER + "".join(lines) + body


def checked(text: str, slug: str = "narval"):
    return check_script(text, cluster(slug)).notes
