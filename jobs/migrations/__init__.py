"""The jobs app's schema, as makemigrations wrote it."""
