"""The production install, proved end to end: a venv made from requirements.txt alone, by the
Dockerfile's own install line (tests/runtime_venv.py), runs every command docker/compose.yaml
runs, with compose's environment and .env.example's values, on PostgreSQL and Redis; a job
submitted through gunicorn's API then runs on the dev cluster and is followed to COMPLETED.

The dev venv hides a missing runtime dependency (a worker on Redis needs `packaging`, which the
dev tools pulled in): this test is what notices one."""

import asyncio
import contextlib
import json
import os
import secrets
import shlex
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import httpx2
import psycopg
import pytest
import yaml
from cryptography.fernet import Fernet
from django.db import connection
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from jobs.models import JobState
from tests.devcluster import DevCluster
from tests.processes import REPO
from tests.runtime_venv import runtime_venv
from tests.services import service_missing
from tests.workers import OwnRedis, database_url, own_redis_server, print_logs, wait

pytestmark = pytest.mark.service

COMPOSE = REPO / "docker" / "compose.yaml"
# The address compose publishes, and where the test's gunicorn listens instead.
COMPOSE_BIND = "0.0.0.0:8000"
COMPOSE_PROBE = "127.0.0.1:8000"
USER = "alice"
SCRIPT = "#!/bin/bash\n#SBATCH --time=00:02:00\necho hello from the runtime venv\n"
# The TLS proxy in front of gunicorn says the request came over HTTPS (.env.example trusts it).
PROXY_HEADERS = {"X-Forwarded-Proto": "https"}
# What compose's Celery services log once they take work.
READY = {"worker": " ready.", "poller": " ready.", "beat": "beat: Starting..."}


@pytest.fixture
def own_redis(tmp_path: Path):
    yield from own_redis_server(tmp_path, persistent=False)


@pytest.fixture
def own_database() -> Iterator[str]:
    """A database of the test's own, empty, so that `migrate` in the new venv starts from zero;
    dropped afterwards. The test database of pytest-django is never made for this test."""
    if connection.vendor != "postgresql":
        service_missing(
            "the production install runs on PostgreSQL, as compose.yaml's does: "
            "run with DATABASE_URL=postgres://... (CI does)"
        )
    db = connection.settings_dict
    name = f"test_{db['NAME']}_runtime"
    server = {"host": db["HOST"] or "localhost", "port": db["PORT"] or 5432}
    server |= {"user": db["USER"], "password": db["PASSWORD"], "dbname": "postgres"}
    drop = f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'
    with psycopg.connect(autocommit=True, **server) as admin:
        admin.execute(drop)
        admin.execute(f'CREATE DATABASE "{name}"')
    yield database_url(name)
    with psycopg.connect(autocommit=True, **server) as admin:
        admin.execute(drop)


def test_the_runtime_venv_serves_a_job_to_completion(
    devcluster: DevCluster, own_redis: OwnRedis, own_database: str, tmp_path: Path
) -> None:
    venv = runtime_venv()
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    env = _production_env(services["web"]["environment"], venv, tmp_path, own_database, own_redis)
    started: dict[str, subprocess.Popen] = {}
    try:
        web = services["web"]["command"]
        assert web.count(COMPOSE_BIND) == 1, f"the web command binds elsewhere: {web}"
        web = web.replace(COMPOSE_BIND, f"127.0.0.1:{port}")
        started["web"] = _start(web, env, tmp_path, "web")
        wait(lambda: _up(base, started["web"]), 120, "migrate, the seeds and gunicorn")
        # Compose's own probe, as compose runs it: in the container, over plain HTTP.
        cmd, *probe = services["web"]["healthcheck"]["test"]
        assert cmd == "CMD"
        _run([a.replace(COMPOSE_PROBE, f"127.0.0.1:{port}") for a in probe], env, tmp_path, "probe")
        for name in READY:
            started[name] = _start(services[name]["command"], env, tmp_path, name)

        # What an administrator does next: compose.yaml's header, then a login on the cluster.
        admin = ("--noinput", "--username", USER, "--email", f"{USER}@example.org")
        _manage(env, tmp_path, "createsuperuser", *admin)
        _manage(env, tmp_path, "register_devcluster", USER)
        secret = _manage(env, tmp_path, "create_api_token", USER).strip()
        auth = {"Authorization": f"Bearer {secret}"}
        # The image runs it at build time; --dry-run leaves the checkout's staticfiles/ alone.
        _manage(env, tmp_path, "collectstatic", "--noinput", "--dry-run")
        wait(lambda: all(_ready(name, started, tmp_path) for name in READY), 60, "Celery to start")

        body = {"cluster": "local", "name": "runtime", "script": SCRIPT, "accept_findings": True}
        job = _api(base, "POST", "/api/v1/jobs", auth, body, expect=201)
        seen = _follow(base, auth, job["id"], started)
        assert seen[-1] == JobState.COMPLETED, seen
        output = _api(base, "GET", f"/api/v1/jobs/{job['id']}/output", auth)
        assert "hello from the runtime venv" in output["text"], output
        # An agent's MCP client, through gunicorn's workers: the job is there, in words.
        listed = asyncio.run(_mcp_job(base, auth, job["id"]))
        assert listed["state"] == JobState.COMPLETED and listed["name"] == "runtime", listed
        assert "hello from the runtime venv" in listed["output_tail"], listed

        for process in started.values():
            _stop(process)
        left = {name: members for name, p in started.items() if (members := _group(p.pid))}
        assert not left, f"processes left 15 s after SIGTERM: {left}"
    except BaseException:
        print_logs(tmp_path)
        raise
    finally:
        for process in started.values():
            _stop(process)
            _kill_group(process.pid)


def _follow(
    base: str, auth: dict[str, str], job_id: int, started: dict[str, subprocess.Popen]
) -> list[str]:
    """The job's states as the API shows them, until a final one; every process must live."""
    seen = [""]
    deadline = time.monotonic() + 90
    while seen[-1] not in JobState.final():
        assert time.monotonic() < deadline, f"the job went through {seen[1:]} in 90 s"
        dead = [name for name, process in started.items() if process.poll() is not None]
        assert not dead, f"exited while the job ran: {dead}"
        state = _api(base, "GET", f"/api/v1/jobs/{job_id}", auth)["state"]
        if state != seen[-1]:
            seen.append(state)
        time.sleep(0.5)
    return seen[1:]


def _production_env(
    compose_env: dict[str, str], venv: Path, folder: Path, database: str, redis: OwnRedis
) -> dict[str, str]:
    """What a container of compose.yaml sees: the venv's commands first on PATH, .env.example's
    values as `cp .env.example .env` gives them with the secrets it asks for, then compose's own
    environment; production mode whatever the example says."""
    # Compose points these at its own services; a new one there must be pointed here too.
    ours = {"DATABASE_URL": database, "CELERY_BROKER_URL": redis.url}
    assert compose_env.keys() == ours.keys(), f"compose sets {sorted(compose_env)}: handle each"
    example = {}
    for line in (REPO / ".env.example").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, value = line.partition("=")
            example[key] = value
    return {
        "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        # gunicorn keeps its control socket under HOME: one per test, as one per container.
        "HOME": str(folder),
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        **example,
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "PORTAL_ENCRYPTION_KEY": Fernet.generate_key().decode(),
        # Plain HTTP between the test and gunicorn: Secure cookies would never come back.
        "SECURE_COOKIES": "false",
        "PORTAL_VAR_DIR": str(folder / "var"),
        "DJANGO_SUPERUSER_PASSWORD": secrets.token_urlsafe(16),
        # A poll every second, so the job's end shows within one; no history of earlier tests'
        # jobs on the dev cluster's one user (tests/conftest.py: no_history).
        "POLL_SECONDS": "1",
        "POLL_MAX_SECONDS": "1",
        "HISTORY_DAYS": "0",
        **ours,
    }


def _start(command: str, env: dict[str, str], folder: Path, name: str) -> subprocess.Popen:
    # A session of its own, so that the whole group (gunicorn's and Celery's children) can be
    # signalled and checked for leftovers.
    with (folder / f"{name}.log").open("w") as log:
        return subprocess.Popen(
            shlex.split(command), cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip


def _run(argv: list[str], env: dict[str, str], folder: Path, name: str) -> str:
    result = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    # stderr only in the log: create_api_token's stdout is the token.
    (folder / f"{name}.log").write_text(result.stderr)
    assert result.returncode == 0, f"{shlex.join(argv)}:\n{result.stdout}{result.stderr}"
    return result.stdout


def _manage(env: dict[str, str], folder: Path, command: str, *args: str) -> str:
    return _run(["python", "manage.py", command, *args], env, folder, command)


def _ready(name: str, started: dict[str, subprocess.Popen], folder: Path) -> bool:
    assert started[name].poll() is None, f"{name} exited at start"
    return READY[name] in (folder / f"{name}.log").read_text()


def _up(base: str, web: subprocess.Popen) -> bool:
    assert web.poll() is None, "the web command exited"
    try:
        request = urllib.request.Request(base + "/healthz/", headers=PROXY_HEADERS)
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status == 200
    except OSError:  # not listening yet, or its workers still loading Django
        return False


def _api(
    base: str, method: str, path: str, auth: dict[str, str], body: dict | None = None, expect=200
) -> dict:
    headers = auth | PROXY_HEADERS | {"Content-Type": "application/json"}
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data, headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, text = response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read().decode()
    assert status == expect, f"{method} {path}: {status} {text}"
    return json.loads(text)


async def _mcp_job(base: str, auth: dict[str, str], job_id: int) -> dict:
    async with httpx2.AsyncClient(headers=auth | PROXY_HEADERS, timeout=30) as http:
        transport = streamable_http_client(f"{base}/mcp", http_client=http)
        async with Client(transport) as client:
            result = await client.call_tool("job", {"job_id": job_id})
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM to the group, as `docker compose stop` sends; SIGKILL to the leader after 10 s."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    # Children may outlive their parent by a moment while they finish.
    deadline = time.monotonic() + 5
    while _group(process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)


def _group(pgid: int) -> list[str]:
    """The live processes (zombies aside) of a process group, as "pid command"."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        # The command sits in parentheses and may hold spaces; the fields after it are fixed.
        command, fields = (
            text[text.index("(") + 1 : text.rindex(")")],
            text[text.rindex(")") + 2 :].split(),
        )
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(f"{stat.parent.name} {command}")
    return members


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
