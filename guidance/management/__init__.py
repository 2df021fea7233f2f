"""Management commands of the guidance app."""
