"""Plans: what a program (a coding agent through MCP, a script through the API) would submit,
checked, costed and estimated, held until the user says so. Making one reaches Slurm only for
`sbatch --test-only`; a job is made only by `deciding.confirm`, once per plan."""
