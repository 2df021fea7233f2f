"""The project's own schema (API tokens), as makemigrations wrote it."""
