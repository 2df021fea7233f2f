"""Management commands of the jobs app."""
