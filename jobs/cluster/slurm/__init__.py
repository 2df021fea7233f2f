"""What Slurm 22.05 prints, read into dataclasses: pure functions, no I/O, no Django.

The argv of each command the portal parses lives beside its parser (`squeue_argv`, `sacct_argv`,
...), so that no caller can ask for other columns than the parser reads. Columns are separated
by `|`; the free-text ones (job name, comment) come last, and a `|` inside the last one stays in
it. Slurm prints times in the local time of the process that asks, without a zone; the commands
here run with TZ=UTC (`IN_UTC`), so the times they print, and the times they read, are UTC.
The tests feed text captured from a real cluster (tests/slurm_output/).

Callers use the package, `slurm.parse_squeue(...)`; the modules are split by subject: states,
values (what several commands print), sbatch, squeue, sacct, nodes (partitions and nodes).
"""

from jobs.cluster.slurm.nodes import (
    NODES_ARGV,
    PARTITIONS_ARGV,
    SINFO_NODES_FORMAT,
    GpuPartition,
    NodeFacts,
    PartitionFacts,
    gpu_partitions,
    parse_nodes,
    parse_partitions,
)
from jobs.cluster.slurm.sacct import SACCT_FIELDS, AccountedJob, parse_sacct, sacct_argv
from jobs.cluster.slurm.sbatch import (
    TEST_ONLY_ARGV,
    Submitted,
    WouldStart,
    parse_sbatch,
    parse_test_only,
)
from jobs.cluster.slurm.squeue import SQUEUE_FORMAT, QueuedJob, parse_squeue, squeue_argv
from jobs.cluster.slurm.states import SlurmState
from jobs.cluster.slurm.values import (
    IN_UTC,
    ExitCode,
    Gres,
    JobId,
    SlurmParseError,
    duration_hours,
    expand_hostlist,
    parse_duration,
    parse_gres,
    parse_memory_mb,
    parse_time,
    parse_tres,
)

__all__ = [
    "IN_UTC",
    "NODES_ARGV",
    "PARTITIONS_ARGV",
    "SACCT_FIELDS",
    "SINFO_NODES_FORMAT",
    "SQUEUE_FORMAT",
    "TEST_ONLY_ARGV",
    "AccountedJob",
    "ExitCode",
    "GpuPartition",
    "Gres",
    "JobId",
    "NodeFacts",
    "PartitionFacts",
    "QueuedJob",
    "SlurmParseError",
    "SlurmState",
    "Submitted",
    "WouldStart",
    "duration_hours",
    "expand_hostlist",
    "gpu_partitions",
    "parse_duration",
    "parse_gres",
    "parse_memory_mb",
    "parse_nodes",
    "parse_partitions",
    "parse_sacct",
    "parse_sbatch",
    "parse_squeue",
    "parse_test_only",
    "parse_time",
    "parse_tres",
    "sacct_argv",
    "squeue_argv",
]
