"""Management commands of the project."""
