"""Shared by the cluster benchmarks: a fresh portal database with a login on the local cluster."""

import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def portal_with_local_cluster():
    """Starts Django on a temporary SQLite database; returns the bench user's ClusterAccount."""
    subprocess.run([str(ROOT / "docker/devcluster/devcluster"), "up"], check=True)
    var = tempfile.mkdtemp(prefix="bench-cluster-")
    os.environ.update(
        DJANGO_SETTINGS_MODULE="portal.settings",
        DEBUG="true",
        PORTAL_VAR_DIR=var,
        # BENCH_DATABASE_URL (an empty database) measures on PostgreSQL, as deployed.
        DATABASE_URL=os.environ.get("BENCH_DATABASE_URL") or f"sqlite:///{var}/db.sqlite3",
        LOG_LEVEL="WARNING",
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from jobs.models import ClusterAccount

    call_command("migrate", verbosity=0)
    get_user_model().objects.create_user("bench")
    call_command("register_devcluster", "bench", stdout=io.StringIO())
    return ClusterAccount.objects.get(owner__username="bench", cluster__slug="local")


class CountingCommands:
    """Counts the commands the gateway runs (run() and run_script() alike), by wrapping the
    _run() both go through."""

    def __init__(self, gateway):
        self.gateway, self.count, self._run = gateway, 0, gateway._run

    def __enter__(self):
        def run(*args, **kwargs):
            self.count += 1
            return self._run(*args, **kwargs)

        self.gateway._run = run
        return self

    def __exit__(self, *exc):
        self.gateway._run = self._run
