# PostgreSQL restarted for real while a worker is in the middle of a poll. The poll reads three
# jobs that Slurm cancelled, and saves each one's event and new state. The database crashes after
# the events are written and before the states are: nothing of that poll may stay (they go in one
# transaction), and the same task must run again at once and save it all, once. A retry of the
# poll must not wait for the hold the crashed attempt could not give back.
#
# The crash is timed with a row lock: the test locks one job's row, the worker writes the three
# events and waits to save the states, and the test stops PostgreSQL (immediate mode, as a
# crash) and starts it again. The test runs a PostgreSQL server of its own on a free port, so the
# restart disturbs nothing else; the worker and the setup talk to it from other processes.

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.devcluster import DevCluster
from tests.processes import manage, portal_env, python
from tests.services import service_missing
from tests.workers import print_logs, wait, worker

pytestmark = pytest.mark.service
BIN = next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)), None)
ENCRYPTION_KEY = "ZGF0YWJhc2UtcmVzdGFydC10ZXN0LWtleS0xMjM0NTY="


class OwnPostgres:
    """A PostgreSQL server of the test's own, crashed and started again."""

    def __init__(self, bin_dir: Path, folder: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.bin, self.folder, self.data = bin_dir, folder, folder / "data"
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/portal"
        # initdb and postgres refuse to run as root.
        self.as_owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def _run(self, *argv: str) -> None:
        subprocess.run([*self.as_owner, *argv], check=True, capture_output=True, timeout=60)

    def init(self) -> None:
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust",
                  "--no-sync", "-E", "UTF8")  # fmt: skip
        self.start()
        with psycopg.connect(self.url.replace("/portal", "/postgres"), autocommit=True) as db:
            db.execute("CREATE DATABASE portal")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.folder / "log"),
                  "-o", options, "-w", "start")  # fmt: skip

    def crash(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def connect(self) -> psycopg.Connection:
        return psycopg.connect(self.url, autocommit=True)


@pytest.fixture
def own_postgres() -> Iterator[OwnPostgres]:
    if BIN is None or not (BIN / "initdb").exists():
        service_missing(
            "PostgreSQL's server programs are not installed (apt-get install postgresql)"
        )
    folder = Path(tempfile.mkdtemp(prefix="portal-pg-"))  # postgres must reach it: not tmp_path
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    server = OwnPostgres(BIN, folder)
    try:
        server.init()
        yield server
    finally:
        subprocess.run([*server.as_owner, str(BIN / "pg_ctl"), "-D", str(server.data), "-m",
                        "immediate", "stop"], capture_output=True)  # fmt: skip
        shutil.rmtree(folder, ignore_errors=True)


# Run in the portal's environment, against the test's own server: a user with a login on the dev
# cluster and three jobs submitted there, held so that they never run.
_SETUP = """
import io, json, uuid
import django
django.setup()
from django.contrib.auth import get_user_model
from django.core.management import call_command
from jobs import tasks
from jobs.models import ClusterAccount, Job
user = get_user_model().objects.create_user("alice")
call_command("seed_guidance", stdout=io.StringIO())
call_command("register_devcluster", "alice", stdout=io.StringIO())
account = ClusterAccount.objects.get(owner=user, cluster__slug="local")
script = "#!/bin/bash\\n#SBATCH --hold\\n#SBATCH --time=00:01:00\\ntrue\\n"
made = []
for _ in range(3):
    job = Job.objects.create(owner=user, account=account, name=f"t-{uuid.uuid4().hex[:8]}",
                             script=script)
    tasks.submit_job.apply(args=[job.pk])
    job.refresh_from_db()
    made.append([job.pk, job.slurm_id])
print(json.dumps(made))
"""


def test_a_poll_cut_by_a_database_restart_saves_nothing_then_all_once(
    devcluster: DevCluster, own_postgres: OwnPostgres, tmp_path: Path
) -> None:
    env = portal_env(tmp_path, DATABASE_URL=own_postgres.url, PORTAL_ENCRYPTION_KEY=ENCRYPTION_KEY)
    migrated = manage(env, "migrate", "--noinput")
    assert migrated.returncode == 0, migrated.stderr
    setup = python(env, _SETUP)
    assert setup.returncode == 0, setup.stderr
    jobs = json.loads(setup.stdout.splitlines()[-1])  # [pk, slurm id], oldest first
    assert all(slurm_id for _, slurm_id in jobs)
    [oldest, *_] = [pk for pk, _ in jobs]
    ids = ",".join(slurm_id for _, slurm_id in jobs)
    cancelled = devcluster.ssh(f"scancel {ids.replace(',', ' ')}")
    assert cancelled.returncode == 0, cancelled.stderr
    # One poll is to see them ended: wait until accounting has their end too (a moment later).
    ended = f"sacct -n -X -P -j {ids} -o State,End | grep -c '^CANCELLED.*|[0-9]'"
    wait(lambda: devcluster.ssh(ended).stdout.strip() == "3", 30, "sacct to have the cancels")

    lock = own_postgres.connect()
    try:
        lock.execute("BEGIN")
        lock.execute("SELECT 1 FROM jobs_job WHERE id = %s FOR UPDATE", [oldest])
        queued = python(env, _QUEUE_A_POLL)
        assert queued.returncode == 0, queued.stderr
        with worker(env, tmp_path / "worker.log"):
            wait(lambda: _blocked(own_postgres), 60, "the poll to wait on the locked job")
            assert _cancelled_events(own_postgres) == 0, "a poll in progress showed its writes"
            own_postgres.crash()  # with the lock held: the poll must not go on before it
            time.sleep(3)  # down past the first retry (2 s later): the second one (4 s) finds it
            own_postgres.start()
            # Nothing of the cut poll stayed (or its events would be there twice), and the
            # retry, 2 s later, saves it all.
            wait(lambda: _states(own_postgres) == {"CANCELLED"}, 30, "the retried poll")
            assert _cancelled_events(own_postgres) == 3  # one each
            log = (tmp_path / "worker.log").read_text()
            assert log.count("Polling stopped on the database, trying again") == 2
    except BaseException:
        print_logs(tmp_path)
        print(own_postgres.folder.joinpath("log").read_text())
        raise
    finally:
        lock.close()


_QUEUE_A_POLL = """
import django
django.setup()
from jobs import tasks
tasks.poll_clusters.delay()
"""


def _blocked(server: OwnPostgres) -> bool:
    """A session waits on the locked job: the poll, saving the jobs' states (or, were its writes
    not one transaction, the locked job's event, whose foreign key is then checked at once)."""
    with server.connect() as db:
        row = db.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND (query LIKE 'UPDATE %jobs_job%' OR query LIKE 'INSERT INTO %jobs_jobevent%')"
        ).fetchone()
    return bool(row and row[0])


def _cancelled_events(server: OwnPostgres) -> int:
    deadline = time.monotonic() + 30
    while True:
        try:
            with server.connect() as db:
                row = db.execute("SELECT count(*) FROM jobs_jobevent WHERE state = 'CANCELLED'")
                return row.fetchone()[0]
        except psycopg.OperationalError:  # still recovering from the crash
            assert time.monotonic() < deadline, "the database did not come back"
            time.sleep(0.2)


def _states(server: OwnPostgres) -> set[str]:
    with server.connect() as db:
        return {state for (state,) in db.execute("SELECT state FROM jobs_job").fetchall()}
