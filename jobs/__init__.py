"""The jobs app: composing Slurm jobs, submitting and following them, and their GPU use."""
