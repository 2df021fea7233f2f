# Helpers for tests that run the portal in subprocesses: manage.py commands, a Celery worker, the
# serve supervisor. Each gets a small, explicit environment, so that a developer's exported
# DATABASE_URL or CELERY_BROKER_URL can never point a test at real data.

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def portal_env(var_dir: Path, **overrides: str) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", str(var_dir)),
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "DEBUG": "true",
        "PORTAL_VAR_DIR": str(var_dir),
        "DATABASE_URL": f"sqlite:///{var_dir / 'db.sqlite3'}",
        # The dev cluster's one user holds every earlier test's jobs: not the test user's own
        # (tests/conftest.py: no_history).
        "HISTORY_DAYS": "0",
    }
    return env | overrides


def run_python(
    env: dict[str, str], *args: str, timeout: float = 120
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return run_python(env, str(REPO / "manage.py"), *args)


def python(env: dict[str, str], code: str, *args: str) -> subprocess.CompletedProcess:
    return run_python(env, "-c", code, *args)


def start_python(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen:
    # A session of its own, so that the test can signal the process group like a terminal would.
    with log.open("w") as output:
        return subprocess.Popen(
            [sys.executable, *args],
            cwd=REPO,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
