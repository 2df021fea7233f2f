"""Polling a whole site: N portal users, each with a Unix user of its own on the local cluster (its
key, its queue, its Slurm association) and one held job, polled by the real beat and Celery
workers on Redis and PostgreSQL.

For each N it prints: the time from beat's first dispatch until every login has been polled
once; the lag until a cancelled job shows as ended, unwatched (its login backed off) and on its
page while its owner watches it (the page asked every 2 s, as htmx does); Slurm's RPCs per poll
cycle by the logins' Unix users and the reader (sdiag for slurmctld, `sacctmgr show stats` for
slurmdbd); the logins polled per poll period (from the jobs' `polled` times); the SSH
connections each worker process holds; both queues' lengths every 5 s while it runs for
--minutes (flat: each login is queued at most once); and the machine's load. With --reader the
cluster's read-only service login reads every login's jobs (jobs.cluster.reader_poll).

It measures the code of the checkout it sits in: copied into an older checkout (before the
fan-out, when beat's one task walked every login on the "celery" queue) it gives the figures
before. The polls are the states' alone (HISTORY_DAYS is 0: no history reads), and the RPC
counts include whatever else the test user does meanwhile (other tests on the dev cluster).
Needs root (the dev cluster, Unix users), PostgreSQL on 127.0.0.1:5432 and redis-server.
Everything it makes is named after its pid (database bench_poll_scale_<pid>, jobs
pollscale-<pid>, Unix users pscale<pid>u<n>) and removed at the end, or by the next run if this
one was killed; other runs' are left alone.
Usage: .venv/bin/python bench/poll_scale.py [--logins 10,100,500,1000] [--workers 4]
       [--pool prefork|threads] [--concurrency 1] [--minutes 1] [--reader]
       (--logins 10 --minutes 0.5: a quick smoke run)
"""

import argparse
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = str(ROOT / ".venv" / "bin" / "python")
POSTGRES = "postgres://postgres@127.0.0.1:5432"
LAB = os.environ.get("DEVCLUSTER_DIR", "/var/tmp/portal-devcluster")
SLURM_ENV = {"SLURM_CONF": f"{LAB}/etc/slurm.conf", "PATH": "/usr/sbin:/usr/bin:/bin"}
POLL_SECONDS = 10
WATCH_SECONDS = 5
# One run's things carry its pid, so that a run never touches another's, and a later run can
# tell those of a killed run (its pid gone) from those of one still going.
PREFIX = "pollscale-"
NAME = f"{PREFIX}{os.getpid()}"
DATABASE = f"bench_poll_scale_{os.getpid()}"
# Each login's Unix user: pscale<pid>u<n> (devcluster lets pscale* in over ssh).
UNIX_PREFIX = "pscale"
UNIX_NAME = f"{UNIX_PREFIX}{os.getpid()}u"
ACCOUNT = "portal"  # the dev cluster's Slurm account
QUEUES = ("poll", "celery")  # beat's per-login polls; before the fan-out, its one poll task
STARTED = time.monotonic()


def say(text: str) -> None:
    print(f"[{time.monotonic() - STARTED:6.1f} s] {text}", flush=True)


def main() -> None:
    options = _arguments()
    # `timeout` and Ctrl-C alike: the jobs, keys and database go in `finally`.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(f"{NAME}: terminated"))
    work = Path(tempfile.mkdtemp(prefix="bench-poll-scale-"))
    say("dev cluster up")
    subprocess.run([str(ROOT / "docker/devcluster/devcluster"), "up"], check=True)
    _sweep_killed_runs()
    redis = None
    try:
        redis = _start_redis(work)
        env = _portal(work, f"redis://127.0.0.1:{redis[1]}/0", options)
        _measure_each(options, env, work, redis[1])
    except BaseException:
        say(f"failed: the workers' and beat's logs are in {work}")
        raise
    else:
        shutil.rmtree(work, ignore_errors=True)
    finally:
        say("cleaning up: jobs, Unix users, database, redis")
        _clean_up(str(os.getpid()))
        if redis is not None:
            redis[0].kill()
        if "django" in sys.modules:
            from django.db import connections

            connections.close_all()
        _dropdb(DATABASE)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logins", default="10,100,500,1000", help="sizes, each above the last")
    parser.add_argument("--workers", type=int, default=4, help="worker processes (celery worker)")
    parser.add_argument("--pool", choices=["prefork", "threads"], default="prefork")
    parser.add_argument("--concurrency", type=int, default=1, help="per worker")
    parser.add_argument("--minutes", type=float, default=1.0, help="how long to watch the queue")
    parser.add_argument("--reader", action="store_true", help="through the cluster's reader")
    options = parser.parse_args()
    options.sizes = [int(size) for size in options.logins.split(",")]
    if options.sizes != sorted(set(options.sizes)) or options.sizes[0] < 2:
        parser.error("--logins: sizes of 2 or more, each larger than the last")
    return options


def _start_redis(work: Path) -> tuple[subprocess.Popen, int]:
    import redis

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "",
         "--dir", str(work)],
        stdout=(work / "redis.log").open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    client = redis.Redis(port=port, socket_connect_timeout=1)

    def answers() -> bool:
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False

    _wait(answers, 10, "redis-server to answer")
    return server, port


def _portal(work: Path, broker: str, options: argparse.Namespace) -> dict[str, str]:
    """Django in this process on a fresh database; the environment of its workers and beat."""
    say(f"database {DATABASE}")
    _dropdb(DATABASE)
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
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    get_user_model().objects.create_user(f"{NAME}-owner")
    call_command("register_devcluster", f"{NAME}-owner", *(["--reader"] * options.reader))
    return env


def _measure_each(options: argparse.Namespace, env: dict[str, str], work: Path, port: int):
    from jobs.models import ClusterAccount, Job

    made = 0
    for size in options.sizes:
        _add_logins(size - made)
        made = size
        # Each size starts as a new site would: no login polled yet, none backed off.
        ClusterAccount.objects.update(
            poll_after=None, quiet_polls=0, polled_until=None, polled_by=""
        )
        Job.objects.update(polled=None)
        print(f"\n== {size} logins, {options.workers} workers x {options.concurrency} "
              f"({options.pool}){', through the reader' if options.reader else ''}",
              flush=True)  # fmt: skip
        _run_site(options, env, work, port, size)


def _add_logins(count: int) -> None:
    """`count` portal users, each with a Unix user of its own on the dev cluster (its own key,
    queue and Slurm association, as a site's users have) and one held job."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from jobs.cluster import keys, remote
    from jobs.models import ClusterAccount, Job, JobState

    say(f"making {count} logins: portal users, Unix users, keys, Slurm associations")
    started = time.monotonic()
    anyone = ClusterAccount.objects.select_related("cluster").first()
    first = get_user_model().objects.filter(username__startswith=f"{NAME}-u").count()
    users = get_user_model().objects.bulk_create(
        get_user_model()(username=f"{NAME}-u{first + i}") for i in range(count)
    )
    unix = [f"{UNIX_NAME}{first + i}" for i in range(count)]
    pairs = [keys.generate_keypair(comment=NAME) for _ in users]
    _make_unix_users(unix, [pair.public_line for pair in pairs], anyone.username)
    ClusterAccount.objects.bulk_create(
        ClusterAccount(
            owner=user,
            cluster=anyone.cluster,
            username=username,
            public_key=pair.public_line,
            private_key_encrypted=keys.encrypt(pair.private_pem),
        )
        for user, username, pair in zip(users, unix, pairs, strict=True)
    )
    accounts = ClusterAccount.objects.filter(owner__in=users).order_by("pk")
    jobs = Job.objects.bulk_create(
        Job(owner_id=account.owner_id, account=account, name=NAME, script="#!/bin/bash\ntrue\n")
        for account in accounts
    )
    say(f"submitting {count} held jobs, each as its own user")
    # Each with its job's tag, as the portal's own submission sets it, so the portal knows them.
    loop = (
        'while read -r user tag; do runuser -u "$user" -- sbatch --hold --parsable '
        f"--job-name={NAME} --time=00:10:00 --chdir=/tmp --output=/dev/null "
        '--comment="$tag" --wrap true || exit; done'
    )
    lines = "".join(f"{job.account.username} {remote.tag(job)}\n" for job in jobs)
    done = subprocess.run(
        ["bash", "-c", loop], input=lines, env=SLURM_ENV, capture_output=True, text=True
    )
    ids = [line.split(";")[0] for line in done.stdout.split()]
    if len(ids) != len(jobs):
        raise SystemExit(f"sbatch made {len(ids)} of {len(jobs)} jobs: {done.stderr[-2000:]}")
    for job, slurm_id in zip(jobs, ids, strict=True):
        job.slurm_id, job.state, job.submitted = slurm_id, JobState.PENDING, timezone.now()
    Job.objects.bulk_update(jobs, ["slurm_id", "state", "submitted"], batch_size=500)
    say(f"{count} logins and held jobs made in {time.monotonic() - started:.0f} s")


def _make_unix_users(names: list[str], public_lines: list[str], like: str) -> None:
    """Unix users in the group of `like` (the dev cluster's test user), all at once (newusers,
    chpasswd), each with one authorized key, and their Slurm associations in one sacctmgr."""
    from jobs.cluster import keys

    group = pwd.getpwnam(like).pw_gid
    table = "".join(f"{name}:*::{group}:{NAME}:/home/{name}:/bin/bash\n" for name in names)
    subprocess.run(["newusers"], input=table, text=True, check=True)
    # sshd refuses a locked account; '*' only bars passwords (as devcluster's lab_user does).
    stars = "".join(f"{name}:*\n" for name in names)
    subprocess.run(["chpasswd", "-e"], input=stars, text=True, check=True)
    for name, line in zip(names, public_lines, strict=True):
        user = pwd.getpwnam(name)
        ssh = Path(user.pw_dir) / ".ssh"
        ssh.mkdir(mode=0o700, parents=True, exist_ok=True)
        authorized = ssh / "authorized_keys"
        authorized.write_text(keys.authorized_keys_line(line) + "\n")
        authorized.chmod(0o600)
        for path in (Path(user.pw_dir), ssh, authorized):
            os.chown(path, user.pw_uid, group)
    add = ["sacctmgr", "-i", "add", "user", f"name={','.join(names)}", f"account={ACCOUNT}"]
    subprocess.run(add, env=SLURM_ENV, check=True, capture_output=True)
    # slurmdbd hands new associations to slurmctld a moment later; sbatch is refused until then.
    _wait(lambda: _controller_knows(names), 60, "slurmctld to know the new users")


def _controller_knows(names: list[str]) -> bool:
    asked = ["scontrol", "show", "assoc_mgr", f"users={','.join(names)}", "flags=assoc"]
    shown = subprocess.run(asked, env=SLURM_ENV, capture_output=True, text=True).stdout
    return set(names) <= set(re.findall(r"UserName=([^(\s]+)\(", shown))


def _run_site(options, env: dict[str, str], work: Path, port: int, size: int) -> None:
    import redis

    from jobs.models import Job, JobState

    logs = work / f"n{size}"
    logs.mkdir()
    say(f"starting {options.workers} workers (logs in {logs})")
    workers = [
        _start(env, logs / f"worker{i}.log", "-m", "celery", "-A", "portal", "worker",
               "--queues", ",".join(QUEUES), f"--pool={options.pool}",
               f"--concurrency={options.concurrency}", "--prefetch-multiplier=1",
               "-n", f"w{i}@%h", "--without-mingle", "--without-gossip", "--loglevel=INFO")
        for i in range(options.workers)
    ]  # fmt: skip
    beat = None
    try:
        _wait(
            lambda: all("ready." in p.read_text() for p in logs.glob("worker*.log")),
            60,
            "the workers to start",
        )
        rpcs_before = _rpcs()
        beat = _start(env, logs / "beat.log", "-m", "celery", "-A", "portal", "beat",
                      "--loglevel=INFO", "--schedule", str(logs / "schedule"))  # fmt: skip
        # From beat's first dispatch: a beat takes a few seconds to start.
        _wait(
            lambda: "Sending due task poll-clusters" in (logs / "beat.log").read_text(),
            60,
            "beat's first dispatch",
        )
        began = time.monotonic()
        say(f"beat dispatched; waiting until all {size} logins are polled once")
        everyone = Job.objects.filter(name=NAME, state=JobState.PENDING)  # not those cancelled
        _wait(lambda: not everyone.filter(polled__isnull=True).exists(), 600, "every login")
        all_polled = time.monotonic() - began
        print(f"   every login polled once {all_polled:6.1f} s after beat's first dispatch "
              f"({all_polled / POLL_SECONDS:.1f} poll periods)", flush=True)  # fmt: skip
        say(f"watching the queues for {options.minutes} min")
        watched = _watch(port, workers, everyone, options.minutes * 60)
        cycles = (time.monotonic() - began) / POLL_SECONDS
        daemons = zip(("slurmctld", "slurmdbd"), _rpcs(), rpcs_before, strict=True)
        per_cycle = [
            f"{daemon} {(after[0] - before[0]) / cycles:6.1f}"
            if after[1] == before[1]
            else f"{daemon} - (restarted meanwhile)"
            for daemon, after, before in daemons
        ]
        print(f"   Slurm RPCs per poll cycle: {', '.join(per_cycle)} (over {cycles:.1f} cycles)")
        print(f"   logins polled per poll period, every 5 s: {watched['polled']}")
        for queue in QUEUES:
            print(f"   {queue} queue every 5 s: {watched[queue]}")
        per_process = watched["connections"]
        print(f"   SSH connections per worker process: most {max(per_process, default=0)}, "
              f"all processes together most {max(watched['together'], default=0)}")  # fmt: skip
        unwatched, on_page = _lags(everyone)
        print(f"   a cancel shown after {unwatched:5.1f} s unwatched, {on_page:5.1f} s on its "
              "page while watched")  # fmt: skip
        one, five, fifteen = os.getloadavg()
        print(f"   load average {one:.1f} {five:.1f} {fifteen:.1f} at the end, highest 1-min "
              f"{max(watched['load'], default=one):.1f} while watched ({os.cpu_count()} cores)",
              flush=True)  # fmt: skip
    finally:
        say("stopping beat and workers")
        for process in [*workers, *([beat] if beat else [])]:
            os.killpg(process.pid, signal.SIGTERM)
        for process in [*workers, *([beat] if beat else [])]:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        # What beat queued and no worker took would be the next size's first work.
        redis.Redis(port=port).flushdb()


def _start(env: dict[str, str], log: Path, *argv: str) -> subprocess.Popen:
    from django.conf import settings

    # Workers and beat as deployed: DEBUG off (with it, Django keeps every query's text), with
    # the key this process encrypted the logins' keys with.
    deployed = {
        **env,
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "PORTAL_ENCRYPTION_KEY": settings.PORTAL_ENCRYPTION_KEY,
    }
    with log.open("w") as out:
        return subprocess.Popen(
            [PYTHON, *argv], env=deployed, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip


def _wait(check, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout} s for {what}")
        time.sleep(0.25)


def _watch(port: int, workers: list[subprocess.Popen], everyone, seconds: float) -> dict:
    """Every 5 s: both queues' lengths, the logins polled in the last poll period, each worker
    process's SSH connections, the 1-minute load."""
    import redis
    from django.utils import timezone

    client = redis.Redis(port=port)
    seen: dict[str, list] = {k: [] for k in (*QUEUES, "polled", "connections", "together", "load")}
    end = time.monotonic() + seconds
    while True:
        for queue in QUEUES:
            seen[queue].append(client.llen(queue))
        period = timezone.now() - timedelta(seconds=POLL_SECONDS)
        seen["polled"].append(everyone.filter(polled__gte=period).count())
        counts = [_ssh_sockets(pid) for pid in _family(workers)]
        seen["connections"] += counts
        seen["together"].append(sum(counts))
        seen["load"].append(os.getloadavg()[0])
        if time.monotonic() >= end:
            return seen
        time.sleep(WATCH_SECONDS)


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


def _rpcs() -> list[tuple[int, str]]:
    """RPCs so far of the logins' Unix users, of the test user (whose login reads the cluster's
    load) and of the reader, to slurmctld and to slurmdbd (asked as root, as the cluster's
    administrators ask), each with the time its statistics start from: a daemon restarted
    meanwhile (a fault test on the dev cluster) counts from zero."""
    users = (os.environ.get("DEVCLUSTER_USER", "portaltest"), "portalreader")
    names = "|".join([*(re.escape(user) for user in users), rf"{UNIX_NAME}\d+"])
    found = []
    for argv in (["sdiag"], ["sacctmgr", "show", "stats"]):
        text = subprocess.run(argv, env=SLURM_ENV, capture_output=True, text=True).stdout
        since = re.search(r"^Data since\s+(.*)$", text, re.M)
        table = text.split("statistics by user", 1)[-1]
        counts = re.findall(rf"^\s*(?:{names})\s*\(\s*\d+\)\s*count:(\d+)", table, re.M)
        found.append((sum(int(count) for count in counts), since[1] if since else ""))
    return found


def _lags(everyone) -> tuple[float, float]:
    """Seconds until a cancel shows: one job no one watches (its row read every 0.25 s), one
    whose page is open (asked every 2 s, as htmx asks it)."""
    from django.test import Client

    from jobs.models import Job, JobState

    unwatched, watched = everyone.order_by("pk")[:2]
    page = Client(HTTP_HOST="127.0.0.1")
    page.force_login(watched.owner)
    page.get(f"/jobs/{watched.pk}/")  # its owner opens the page
    say("cancelling two jobs; waiting until the portal shows them ended")
    # As root here, as their owners would on the cluster: the two are different users' jobs.
    subprocess.run(["scancel", unwatched.slurm_id, watched.slurm_id], env=SLURM_ENV, check=True)
    cancelled = time.monotonic()
    seen: dict[str, float] = {}
    asked = 0.0
    while len(seen) < 2 and time.monotonic() - cancelled < 300:
        now = time.monotonic()
        if "watched" not in seen and now - asked >= 2:
            asked = now
            html = page.get(f"/jobs/{watched.pk}/", HTTP_HX_REQUEST="true").content.decode()
            if "Cancelled" in html or "Completing" in html:
                seen["watched"] = now - cancelled
        ended = Job.objects.filter(pk=unwatched.pk).exclude(state=JobState.PENDING).exists()
        if "unwatched" not in seen and ended:
            seen["unwatched"] = now - cancelled
        time.sleep(0.25)
    return seen.get("unwatched", float("nan")), seen.get("watched", float("nan"))


def _clean_up(*pids: str) -> None:
    """Cancels the jobs of these runs (by their pid) and removes their Unix users with their
    Slurm associations."""
    for pid in pids:
        scancel = ["scancel", f"--name={PREFIX}{pid}"]
        subprocess.run(scancel, env=SLURM_ENV, capture_output=True, timeout=120)
    names = [user.pw_name for user in pwd.getpwall() if _run_of(user.pw_name) in pids]
    if not names:
        return
    delete = ["sacctmgr", "-i", "delete", "user", f"name={','.join(names)}"]
    subprocess.run(delete, env=SLURM_ENV, capture_output=True, timeout=120)
    loop = 'for user; do userdel --remove "$user" 2>/dev/null; done'
    subprocess.run(["bash", "-c", loop, "userdel", *names], timeout=600)


def _run_of(unix_user: str) -> str | None:
    found = re.fullmatch(rf"{UNIX_PREFIX}(\d+)u\d+", unix_user)
    return found[1] if found else None


def _sweep_killed_runs() -> None:
    """What earlier runs that were killed (SIGKILL, a reboot) left: their held jobs, Unix users
    and databases, known by a pid that no longer runs."""
    queue = subprocess.run(
        ["squeue", "--noheader", "--format=%j"], env=SLURM_ENV, capture_output=True, text=True
    )
    named = (re.fullmatch(rf"{PREFIX}(\d+)", name) for name in queue.stdout.split())
    runs = {found[1] for found in named if found}
    runs |= {run for user in pwd.getpwall() if (run := _run_of(user.pw_name))}
    left = sorted(run for run in runs if _gone(run))
    if left:
        say(f"removing what killed runs left: {', '.join(left)}")
        _clean_up(*left)
    listed = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-Atc", "SELECT datname FROM pg_database"],
        capture_output=True, text=True,
    )  # fmt: skip
    for database in listed.stdout.split():
        found = re.fullmatch(r"bench_poll_scale_(\d+)", database)
        if found and _gone(found[1]):
            _dropdb(database)


def _gone(pid: str) -> bool:
    return not Path(f"/proc/{pid}").exists()


def _dropdb(database: str) -> None:
    subprocess.run(
        ["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--force", "--if-exists", database],
        capture_output=True,
    )


if __name__ == "__main__":
    main()
