"""The composer: its form, the sbatch renderer, compositions, and the checks while composing."""
