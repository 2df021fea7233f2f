"""Real Celery workers for the fault tests: they run in their own processes against the test
database, which must be PostgreSQL so that they see the test's committed rows and wait on its
locks (tests.services.need_postgresql_for_workers)."""

import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import redis
from django.conf import settings
from django.db import connection

from jobs.models import ClusterAccount, Job
from tests.devcluster import DevCluster
from tests.processes import portal_env, start_python
from tests.services import service_missing

# Both of the portal's queues: submissions (Celery's default) and beat's polls.
POLL_AND_DEFAULT = "celery,poll"


def worker_env(folder: Path, broker_url: str, **overrides: str) -> dict[str, str]:
    """The portal's environment for workers that share the test database, on `broker_url`; with
    the test's encryption key, so that they can read the logins' SSH keys."""
    return portal_env(
        folder,
        DATABASE_URL=database_url(),
        CELERY_BROKER_URL=broker_url,
        PORTAL_ENCRYPTION_KEY=settings.PORTAL_ENCRYPTION_KEY,
        **overrides,
    )


def database_url(name: str = "") -> str:
    """The test database (not the one DATABASE_URL names), for the workers and the locks; or
    another database `name` on its server."""
    db = connection.settings_dict
    login = quote(db["USER"], safe="")
    if db["PASSWORD"]:
        login += f":{quote(db['PASSWORD'], safe='')}"
    name = quote(name or db["NAME"], safe="")
    where = f"{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{name}"
    return f"postgres://{login}@{where}" if login else f"postgres://{where}"


@contextmanager
def worker(
    env: dict[str, str], log: Path, queue: str = POLL_AND_DEFAULT, *options: str
) -> Iterator[subprocess.Popen]:
    """A worker in a session of its own, stopped (then killed) when the block ends."""
    process = start_python(
        env, log, "-m", "celery", "-A", "portal", "worker", "--queues", queue,
        "--loglevel=INFO", "--without-mingle", "--without-gossip", "--without-heartbeat",
        *(options or ("--pool=solo",)),
    )  # fmt: skip
    try:
        yield process
    finally:
        stop(process)


def blocked_on_lock(query: str) -> int | None:
    """The server pid of a session of the test database waiting on a lock in a statement LIKE
    `query`: a worker that reached the point the test locked."""
    # Asked on the test's own connection: one inside the lock's transaction would keep seeing
    # the activity as it was when that transaction first looked.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND query LIKE %s",
            [query],
        )
        row = cursor.fetchone()
    return row[0] if row else None


def slurm_jobs(devcluster: DevCluster, job: Job) -> list[str]:
    """Ids of every Slurm job, in any state, that carries this portal job's tag."""
    result = devcluster.ssh("squeue --noheader --states=all --format='%i|%k'")
    assert result.returncode == 0, result.stderr
    rows = (line.split("|", 1) for line in result.stdout.splitlines())
    return [slurm_id for slurm_id, comment in rows if comment == f"portal:{job.tag}"]


def wait[T](check: Callable[[], T], timeout: float, what: str) -> T:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        time.sleep(0.1)
    return value


def print_logs(folder: Path) -> None:
    for log in sorted(folder.glob("*.log")):
        print(f"--- {log.name}:\n{log.read_text()}")


HELD_SCRIPT = "#!/bin/bash\n#SBATCH --hold\n#SBATCH --time=00:01:00\ntrue\n"


def held_job(account: ClusterAccount) -> Job:
    """A job whose script holds it: it waits in Slurm's queue and never runs, whatever happens
    to the test."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    return Job.objects.create(owner=account.owner, account=account, name=name, script=HELD_SCRIPT)


def state_of(job: Job) -> str:
    return Job.objects.values_list("state", flat=True).get(pk=job.pk)


def stop(process: subprocess.Popen) -> None:
    """SIGTERM to its group, then SIGKILL if it has not gone in 10 s."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


class OwnRedis:
    """A redis-server of the test's own, killed and started again as a crash would."""

    def __init__(self, folder: Path, persistent: bool) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.folder = folder
        self.persistence = ["--appendonly", "yes", "--appendfsync", "always"] if persistent else []
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
             "--dir", str(self.folder), *self.persistence],
            stdout=(self.folder / "redis.log").open("a"), stderr=subprocess.STDOUT,
        )  # fmt: skip
        client = redis.Redis.from_url(self.url, socket_connect_timeout=1)
        wait(lambda: _answers(client), 10, "redis-server to start")

    def kill(self) -> None:
        assert self.process
        self.process.kill()
        self.process.wait()

    def queued(self) -> int:
        client = redis.Redis.from_url(self.url)
        return sum(client.llen(queue) for queue in POLL_AND_DEFAULT.split(","))


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


def own_redis_server(folder: Path, persistent: bool) -> Iterator[OwnRedis]:
    """For a fixture: a redis-server of the test's own, killed when the test ends."""
    if not shutil.which("redis-server"):
        service_missing("redis-server is not installed (apt-get install redis-server)")
    (folder / "redis").mkdir()
    server = OwnRedis(folder / "redis", persistent=persistent)
    server.start()
    yield server
    if server.process and server.process.poll() is None:
        server.kill()
