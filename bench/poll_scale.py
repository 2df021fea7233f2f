"""Polling a whole site: N portal users, each with a key of its own on the local cluster and one
held job, polled by the real beat and Celery workers on Redis and PostgreSQL.

For each N it prints: the time from beat's first dispatch until every login has been polled
once; the lag until a cancelled job shows as ended, unwatched (its login backed off) and on its
page while its owner watches it (the page asked every 2 s, as htmx does); Slurm's RPCs per poll
cycle by the logins' Unix user and the reader's (sdiag for slurmctld, `sacctmgr show stats` for
slurmdbd); the most SSH connections any worker process holds; and the poll queue's length every
5 s while it runs for --minutes (flat: each login is queued at most once). With --reader the
cluster's read-only service login reads every login's jobs (jobs.cluster.reader_poll).

The logins share the dev cluster's Unix user, so each login's history would be everyone's
jobs: HISTORY_DAYS is 0 here. Needs root (the dev cluster), PostgreSQL on 127.0.0.1:5432 and
redis-server; makes and drops the database bench_poll_scale.
Usage: .venv/bin/python bench/poll_scale.py [--logins 10,100,500,1000] [--workers 4]
       [--pool prefork|threads] [--concurrency 1] [--minutes 1] [--reader]
"""

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = str(ROOT / ".venv" / "bin" / "python")
DATABASE = "bench_poll_scale"
POSTGRES = "postgres://postgres@127.0.0.1:5432"
POLL_SECONDS = 10
NAME = "pollscale"


def main() -> None:
    options = _arguments()
    work = Path(tempfile.mkdtemp(prefix="bench-poll-scale-"))
    subprocess.run([str(ROOT / "docker/devcluster/devcluster"), "up"], check=True)
    redis = _start_redis(work)
    try:
        env = _portal(work, f"redis://127.0.0.1:{redis[1]}/0", options)
        _measure_each(options, env, work, redis[1])
    finally:
        _clean_up()
        redis[0].kill()
        if "django" in sys.modules:
            from django.db import connections

            connections.close_all()
        subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", DATABASE])


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logins", default="10,100,500,1000")
    parser.add_argument("--workers", type=int, default=4, help="worker processes (celery worker)")
    parser.add_argument("--pool", choices=["prefork", "threads"], default="prefork")
    parser.add_argument("--concurrency", type=int, default=1, help="per worker")
    parser.add_argument("--minutes", type=float, default=1.0, help="how long to watch the queue")
    parser.add_argument("--reader", action="store_true", help="through the cluster's reader")
    options = parser.parse_args()
    options.sizes = [int(size) for size in options.logins.split(",")]
    return options


def _start_redis(work: Path) -> tuple[subprocess.Popen, int]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "",
         "--dir", str(work)],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    time.sleep(0.5)
    return server, port


def _portal(work: Path, broker: str, options: argparse.Namespace) -> dict[str, str]:
    """Django in this process on a fresh database; the environment of its workers and beat."""
    subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", DATABASE])
    subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", DATABASE], check=True)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "DEBUG": "true",
        "PORTAL_VAR_DIR": str(work),
        "DATABASE_URL": f"{POSTGRES}/{DATABASE}",
        "CELERY_BROKER_URL": broker,
        "POLL_SECONDS": str(POLL_SECONDS),
        "HISTORY_DAYS": "0",
        "LOG_LEVEL": "WARNING",
    }
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user(f"{NAME}-owner")
    call_command("register_devcluster", f"{NAME}-owner", *(["--reader"] * options.reader))
    return env


def _measure_each(options: argparse.Namespace, env: dict[str, str], work: Path, port: int):
    from jobs.models import ClusterAccount

    made = 0
    for size in options.sizes:
        _add_logins(size - made)
        made = size
        ClusterAccount.objects.update(
            poll_after=None, quiet_polls=0, polled_until=None, polled_by=""
        )
        from jobs.models import Job

        Job.objects.update(polled=None)
        print(f"\n== {size} logins, {options.workers} workers x {options.concurrency} "
              f"({options.pool}){', through the reader' if options.reader else ''}")  # fmt: skip
        _run_site(options, env, work, port, size)


def _add_logins(count: int) -> None:
    """`count` portal users, each with its own key on the dev cluster and one held job."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from jobs.cluster import keys, remote
    from jobs.cluster.gateway import gateway
    from jobs.models import ClusterAccount, Job, JobState

    started = time.monotonic()
    anyone = ClusterAccount.objects.select_related("cluster").first()
    first = get_user_model().objects.filter(username__startswith=f"{NAME}-u").count()
    users = get_user_model().objects.bulk_create(
        get_user_model()(username=f"{NAME}-u{first + i}") for i in range(count)
    )
    pairs = [keys.generate_keypair(comment=NAME) for _ in users]
    ClusterAccount.objects.bulk_create(
        ClusterAccount(
            owner=user,
            cluster=anyone.cluster,
            username=anyone.username,
            public_key=pair.public_line,
            private_key_encrypted=keys.encrypt(pair.private_pem),
        )
        for user, pair in zip(users, pairs, strict=True)
    )
    authorized = Path(f"~{anyone.username}").expanduser() / ".ssh" / "authorized_keys"
    with authorized.open("a") as out:
        out.writelines(keys.authorized_keys_line(pair.public_line) + "\n" for pair in pairs)
    accounts = ClusterAccount.objects.filter(owner__in=users)
    jobs = Job.objects.bulk_create(
        Job(owner_id=account.owner_id, account=account, name=NAME, script="#!/bin/bash\ntrue\n")
        for account in accounts
    )
    # One SSH command submits them all, each with its job's tag, so the portal knows them.
    loop = (
        f"while read -r tag; do sbatch --hold --parsable --job-name={NAME} --time=00:10:00 "
        '--comment="$tag" --wrap true; done'
    )
    tags = "".join(remote.tag(job) + "\n" for job in jobs)
    done = gateway.run(remote.login_for(anyone), ["bash", "-c", loop], stdin=tags, timeout=1200)
    ids = [line.split(";")[0] for line in done.stdout.split()]
    assert len(ids) == len(jobs), done.stderr
    for job, slurm_id in zip(jobs, ids, strict=True):
        job.slurm_id, job.state, job.submitted = slurm_id, JobState.PENDING, timezone.now()
    Job.objects.bulk_update(jobs, ["slurm_id", "state", "submitted"], batch_size=500)
    print(f"   {count} logins and held jobs made in {time.monotonic() - started:.0f} s")


def _run_site(options, env: dict[str, str], work: Path, port: int, size: int) -> None:
    from jobs.models import Job, JobState

    logs = work / f"n{size}"
    logs.mkdir()
    workers = [
        _start(env, logs / f"worker{i}.log", "-m", "celery", "-A", "portal", "worker",
               "--queues", "celery,poll", f"--pool={options.pool}",
               f"--concurrency={options.concurrency}", "--prefetch-multiplier=1",
               "-n", f"w{i}@%h", "--without-mingle", "--without-gossip", "--loglevel=INFO")
        for i in range(options.workers)
    ]  # fmt: skip
    beat = None
    try:
        _wait(lambda: all("ready." in p.read_text() for p in logs.glob("worker*.log")), 60)
        rpcs_before = _rpcs()
        beat = _start(env, logs / "beat.log", "-m", "celery", "-A", "portal", "beat",
                      "--loglevel=INFO", "--schedule", str(logs / "schedule"))  # fmt: skip
        # From beat's first dispatch: a beat takes a few seconds to start.
        _wait(lambda: "Sending due task poll-clusters" in (logs / "beat.log").read_text(), 60)
        began = time.monotonic()
        everyone = Job.objects.filter(name=NAME, state=JobState.PENDING)  # not the ones cancelled
        _wait(lambda: not everyone.filter(polled__isnull=True).exists(), 600)
        all_polled = time.monotonic() - began
        print(f"   every login polled once {all_polled:6.1f} s after beat's first dispatch "
              f"({all_polled / POLL_SECONDS:.1f} poll periods)")  # fmt: skip
        queue, connections = _watch(port, workers, options.minutes * 60)
        cycles = (time.monotonic() - began) / POLL_SECONDS
        ctld, dbd = (after - before for after, before in zip(_rpcs(), rpcs_before, strict=True))
        print(f"   Slurm RPCs per poll cycle: slurmctld {ctld / cycles:6.1f}, "
              f"slurmdbd {dbd / cycles:6.1f} (over {cycles:.1f} cycles)")  # fmt: skip
        print(f"   poll queue every 5 s: {queue}")
        print(f"   SSH connections per worker process: most {max(connections, default=0)}")
        unwatched, watched = _lags(everyone)
        print(f"   a cancel shown after {unwatched:5.1f} s unwatched, {watched:5.1f} s on its "
              "page while watched")  # fmt: skip
        print(f"   load average {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    finally:
        for process in [*workers, *([beat] if beat else [])]:
            os.killpg(process.pid, signal.SIGTERM)
        for process in [*workers, *([beat] if beat else [])]:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


def _start(env: dict[str, str], log: Path, *argv: str) -> subprocess.Popen:
    with log.open("w") as out:
        return subprocess.Popen(
            [PYTHON, *argv], env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip


def _wait(check, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout} s")
        time.sleep(0.25)


def _watch(port: int, workers: list[subprocess.Popen], seconds: float):
    import redis

    client = redis.Redis(port=port)
    lengths, connections = [], []
    end = time.monotonic() + seconds
    while True:
        lengths.append(client.llen("poll"))
        connections += [_ssh_sockets(pid) for pid in _family(workers)]
        if time.monotonic() >= end:
            return lengths, connections
        time.sleep(5)


def _family(workers: list[subprocess.Popen]) -> list[int]:
    """The worker processes and their pool's children."""
    pids = [process.pid for process in workers]
    children = subprocess.run(
        ["ps", "-o", "pid=", "--ppid", ",".join(map(str, pids))], capture_output=True, text=True
    )
    return pids + [int(pid) for pid in children.stdout.split()]


def _ssh_sockets(pid: int) -> int:
    """ESTABLISHED TCP connections of `pid` to the dev cluster's sshd (port 2222)."""
    inodes = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            target = os.readlink(fd) if fd.is_symlink() else ""
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except (FileNotFoundError, PermissionError):
        return 0
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            if remote_port == 2222 and fields[3] == "01" and fields[9] in inodes:
                count += 1
    return count


def _rpcs() -> tuple[int, int]:
    """RPCs of the logins' Unix user and of the reader's so far: to slurmctld, to slurmdbd
    (asked as root, as the cluster's administrators ask)."""
    users = (os.environ.get("DEVCLUSTER_USER", "portaltest"), "portalreader")
    lab = os.environ.get("DEVCLUSTER_DIR", "/var/tmp/portal-devcluster")
    env = {"SLURM_CONF": f"{lab}/etc/slurm.conf", "PATH": "/usr/sbin:/usr/bin:/bin"}
    found = []
    for argv in (["sdiag"], ["sacctmgr", "show", "stats"]):
        text = subprocess.run(argv, env=env, capture_output=True, text=True).stdout
        table = text.split("statistics by user", 1)[-1]
        names = "|".join(re.escape(user) for user in users)
        counts = re.findall(rf"^\s*(?:{names})\s*\(\s*\d+\)\s*count:(\d+)", table, re.M)
        found.append(sum(int(count) for count in counts))
    return found[0], found[1]


def _lags(everyone) -> tuple[float, float]:
    """Seconds until a cancel shows: one job no one watches, one whose page is open."""
    from django.test import Client

    from jobs.cluster import remote
    from jobs.cluster.gateway import gateway
    from jobs.models import Job, JobState

    unwatched, watched = everyone.order_by("pk")[:2]
    login = remote.login_for(unwatched.account)
    page = Client(HTTP_HOST="127.0.0.1")
    page.force_login(watched.owner)
    page.get(f"/jobs/{watched.pk}/")  # its owner opens the page
    gateway.run(login, ["scancel", unwatched.slurm_id, watched.slurm_id])
    cancelled = time.monotonic()
    seen: dict[str, float] = {}
    while len(seen) < 2 and time.monotonic() - cancelled < 300:
        html = page.get(f"/jobs/{watched.pk}/", HTTP_HX_REQUEST="true").content.decode()
        if "watched" not in seen and ("Cancelled" in html or "Completing" in html):
            seen["watched"] = time.monotonic() - cancelled
        ended = Job.objects.filter(pk=unwatched.pk).exclude(state=JobState.PENDING).exists()
        if "unwatched" not in seen and ended:
            seen["unwatched"] = time.monotonic() - cancelled
        time.sleep(2)
    return seen.get("unwatched", float("nan")), seen.get("watched", float("nan"))


def _clean_up() -> None:
    """Cancels the bench's jobs and takes its keys out of the test user's authorized_keys."""
    user = os.environ.get("DEVCLUSTER_USER", "portaltest")
    devcluster = str(ROOT / "docker/devcluster/devcluster")
    subprocess.run([devcluster, "ssh", f"scancel --name={NAME}"], capture_output=True)
    authorized = Path(f"~{user}").expanduser() / ".ssh" / "authorized_keys"
    kept = [line for line in authorized.read_text().splitlines() if not line.endswith(f" {NAME}")]
    authorized.write_text("".join(line + "\n" for line in kept))


if __name__ == "__main__":
    main()
