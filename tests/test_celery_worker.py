# A real worker in a subprocess runs portal.tasks.ping. The client side runs in a subprocess too,
# so that both read the broker and result backend from the environment through portal/settings.py,
# as they do in production.

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from tests.processes import portal_env, python, start_python
from tests.services import service_missing
from tests.workers import stop

pytestmark = pytest.mark.service  # real Celery workers, one of them on Redis

REDIS_URL = "redis://127.0.0.1:6379/15"
PING = (
    "import django; django.setup(); from portal.tasks import ping; "
    "print(ping.delay().get(timeout=30))"
)


@contextmanager
def running_worker(env: dict[str, str], log: Path) -> Iterator[subprocess.Popen]:
    worker = start_python(
        env, log, "-m", "celery", "-A", "portal", "worker", "--pool=solo",
        "--loglevel=INFO", "--without-mingle", "--without-gossip",
    )  # fmt: skip
    try:
        yield worker
    finally:
        stop(worker)


def assert_pong(env: dict[str, str], log: Path) -> None:
    with running_worker(env, log):
        result = python(env, PING)
    assert result.returncode == 0, f"{result.stderr}\n--- worker log:\n{log.read_text()}"
    assert result.stdout.strip() == "pong"


def test_a_worker_runs_ping_through_the_embedded_broker(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    # No CELERY_BROKER_URL: the default, a SQLite file under tmp_path/celery.
    env = portal_env(tmp_path, CELERY_RESULT_BACKEND=f"file://{results}")
    assert_pong(env, tmp_path / "worker.log")
    assert (tmp_path / "celery" / "broker.sqlite3").exists()


def test_a_worker_runs_ping_through_the_filesystem_broker(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    env = portal_env(
        tmp_path, CELERY_BROKER_URL="filesystem://", CELERY_RESULT_BACKEND=f"file://{results}"
    )
    assert_pong(env, tmp_path / "worker.log")


def test_a_worker_runs_ping_through_redis(tmp_path: Path) -> None:
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        service_missing(f"Redis is not reachable at {REDIS_URL}: {exc}")
    env = portal_env(tmp_path, CELERY_BROKER_URL=REDIS_URL, CELERY_RESULT_BACKEND=REDIS_URL)
    assert_pong(env, tmp_path / "worker.log")
