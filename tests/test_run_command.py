# What `make run` runs, in subprocesses against a temporary database and var/ folder:
# ensure_admin, and the serve supervisor with its web server and Celery worker.

import os
import re
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.processes import REPO, manage, portal_env, python, start_python
from tests.serving import free_port, healthz_ok

pytestmark = pytest.mark.service  # the portal's own processes: manage.py, serve, a Celery worker

AUTHENTICATE = (
    "import sys, django; django.setup(); "
    "from django.contrib.auth import authenticate; from django.contrib.auth.models import User; "
    "from django.test import RequestFactory; "
    # As the login page asks: with the request, which login throttling (django-axes) needs.
    "print(authenticate(RequestFactory().post('/accounts/login/'), username='admin', "
    "password=sys.argv[1]) is not None, "
    "User.objects.filter(is_superuser=True).count())"
)
STRONG_PASSWORD = "violet-otter-harbour-42"


@pytest.fixture(scope="module")
def migrated_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Migrating takes seconds; each test gets its own copy of one migrated database.
    var_dir = tmp_path_factory.mktemp("migrated")
    result = manage(portal_env(var_dir), "migrate", "--noinput")
    assert result.returncode == 0, result.stderr
    return var_dir / "db.sqlite3"


@pytest.fixture
def env(tmp_path: Path, migrated_db: Path) -> dict[str, str]:
    shutil.copy(migrated_db, tmp_path / "db.sqlite3")
    return portal_env(tmp_path)


def authenticates(env: dict[str, str], password: str) -> tuple[bool, int]:
    result = python(env, AUTHENTICATE, password)
    assert result.returncode == 0, result.stderr
    ok, superusers = result.stdout.split()
    return ok == "True", int(superusers)


def test_ensure_admin_creates_admin_once_with_a_printed_password(env: dict[str, str]) -> None:
    first = manage(env, "ensure_admin")
    assert first.returncode == 0, first.stderr
    match = re.search(r"with password: (\S+)", first.stdout)
    assert match, first.stdout
    assert "changepassword admin" in first.stdout
    assert authenticates(env, match[1]) == (True, 1)

    second = manage(env, "ensure_admin")
    assert second.returncode == 0, second.stderr
    assert "An administrator already exists: log in as admin." in second.stdout
    assert "changepassword" in second.stdout
    assert match[1] not in second.stdout
    assert authenticates(env, match[1]) == (True, 1)


def test_ensure_admin_takes_the_password_from_the_environment(env: dict[str, str]) -> None:
    result = manage({**env, "PORTAL_ADMIN_PASSWORD": STRONG_PASSWORD}, "ensure_admin")
    assert result.returncode == 0, result.stderr
    assert "PORTAL_ADMIN_PASSWORD" in result.stdout
    assert STRONG_PASSWORD not in result.stdout + result.stderr
    assert authenticates(env, STRONG_PASSWORD) == (True, 1)


def test_ensure_admin_rejects_a_weak_password(env: dict[str, str]) -> None:
    result = manage({**env, "PORTAL_ADMIN_PASSWORD": "admin"}, "ensure_admin")
    assert result.returncode != 0
    assert "PORTAL_ADMIN_PASSWORD is too weak" in result.stderr
    assert authenticates(env, "admin") == (False, 0)


def process_table() -> dict[int, tuple[int, int, str]]:
    """Map each live pid to (parent pid, process group, start time); zombies are left out."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # exited while we looked
        # The command name is in parentheses and may hold spaces, so split after its last ")".
        fields = stat[stat.rindex(")") + 2 :].split()
        state, ppid, pgid, start = fields[0], int(fields[1]), int(fields[2]), fields[19]
        if state != "Z":
            table[int(entry.name)] = (ppid, pgid, start)
    return table


def descendants(root: int) -> dict[int, tuple[int, int, str]]:
    table = process_table()
    found, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, info in table.items():
            if info[0] == parent and pid not in found:
                found[pid] = info
                frontier.append(pid)
    return found


def wait_for(predicate: Callable[[], bool], timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.25)
    pytest.fail(f"{what} within {timeout} s\n--- serve output:\n{log.read_text()}")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_serve_answers_and_stops_everything_on_sigint(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "serve.log"
    env = portal_env(tmp_path, PORT=str(port))
    serve = start_python(env, log, str(REPO / "manage.py"), "serve")
    try:
        wait_for(lambda: healthz_ok(port), 30, "/healthz/ did not answer ok", log)
        wait_for(lambda: " ready." in log.read_text(), 30, "the Celery worker was not ready", log)
        children = descendants(serve.pid)
        assert any("runserver" in Path(f"/proc/{pid}/cmdline").read_text() for pid in children)
        assert any("celery" in Path(f"/proc/{pid}/cmdline").read_text() for pid in children)

        stopped_at = time.monotonic()
        os.killpg(serve.pid, signal.SIGINT)
        serve.wait(timeout=10)
        assert serve.returncode == 0, log.read_text()

        groups = {serve.pid} | {pgid for _, pgid, _ in children.values()}

        def all_gone() -> bool:
            # A survivor may have a new parent by now, so match on pid and start time; and
            # anything still in one of the children's process groups was started by them.
            table = process_table()
            return not any(
                (pid in children and info[2] == children[pid][2]) or info[1] in groups
                for pid, info in table.items()
            )

        wait_for(all_gone, 10 - (time.monotonic() - stopped_at), "children outlived serve", log)
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGKILL)
            serve.wait()
