"""What Slurm 22.05 prints, read into dataclasses: pure functions, no I/O, no Django.

One module per subject: `states` (job states), `values` (what several commands print: ids, times,
memory, gres, hostlists), `sbatch`, `squeue`, `sacct` and `nodes` (sinfo's partitions and nodes).
Callers import from the module of the subject (`from jobs.slurm.squeue import parse_squeue`).

The argv of each command lives beside its parser (`squeue_argv`, `sacct_argv`, ...), so that no
caller can ask for other columns than the parser reads. Columns are separated by `|`; the
free-text ones (job name, comment) come last, and a `|` inside the last one stays in it. Slurm
prints times in the local time of the process that asks, without a zone; the commands run with
TZ=UTC (`values.IN_UTC`), so the times they print, and the times they read, are UTC. The tests
feed text captured from a real cluster (tests/slurm_output/).
"""
