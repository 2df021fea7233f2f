"""The guidance app's schema, as makemigrations wrote it."""
