"""The project: settings, URLs, the Celery app, the JSON API and API tokens."""

# Importing the app here makes @shared_task bind to it whenever Django starts.
from portal.celery import app as celery_app

__all__ = ("celery_app",)
