"""The portal as deployed (gunicorn, PostgreSQL, Redis, a Celery worker and beat, DEBUG=false),
driven by Locust from loopback: USERS people opening their job list, job pages with live updates
and the composer's live advice, while the poller works on the active jobs. One user owns JOBS
jobs, ACTIVE of them active. Prints requests per second, p50/p95/p99 per page, errors, the
machine's load, and the database queries each page makes.

Usage: .venv/bin/python bench/load.py [--users 50] [--seconds 60] [--jobs 10000] [--active 1000]
It needs PostgreSQL (postgres@127.0.0.1:5432) and Redis (127.0.0.1:6379), installs Locust into
the venv if it is missing, and makes (then drops) the database portal_load. With the dev cluster
up (docker/devcluster) the poller asks it about the active jobs, as it would a real cluster.
"""

import argparse
import csv
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
DATABASE = "portal_load"
PASSWORD = "load-" + secrets.token_urlsafe(12)
PORT = 8765
LOGINS_PER_SECOND = 2


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--active", type=int, default=1_000)
    args = parser.parse_args()
    _ensure_locust()
    work = Path(tempfile.mkdtemp(prefix="portal-load-"))
    env = _environment(work)
    _psql(f"DROP DATABASE IF EXISTS {DATABASE}")
    _psql(f"CREATE DATABASE {DATABASE}")
    processes = []
    try:
        for command in (["migrate", "--noinput"], ["seed_guidance"], ["seed_templates"]):
            _manage(env, *command)
        _manage(env, "collectstatic", "--noinput")
        job_ids, polled = _people_and_jobs(env, args.users, args.jobs, args.active)
        processes = _start(env, work)
        _wait_for_web()
        csv_prefix = work / "locust"
        locust_env = env | {
            "LOAD_PASSWORD": PASSWORD,
            "LOAD_JOBS": job_ids,
        }
        load_before = os.getloadavg()
        subprocess.run(
            [
                str(Path(PYTHON).parent / "locust"),
                "-f",
                str(REPO / "bench" / "locustfile.py"),
                "--headless",
                "-u",
                str(args.users),
                # Two people log in a second (each login hashes a password, about 0.5 s of
                # CPU); the figures count from when all are in, for --seconds.
                "-r",
                str(LOGINS_PER_SECOND),
                "-t",
                f"{args.seconds + args.users // LOGINS_PER_SECOND + 5}s",
                "--host",
                f"http://127.0.0.1:{PORT}",
                "--csv",
                str(csv_prefix),
                "--only-summary",
                "--loglevel",
                "WARNING",
                "--reset-stats",
            ],
            env=locust_env,
            check=False,
        )
        load_after = os.getloadavg()
        _report(csv_prefix, args, load_before, load_after, polled)
        _report_queries(env, json.loads(job_ids)["load-0"][0])
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        _psql(f"DROP DATABASE IF EXISTS {DATABASE}")
        shutil.rmtree(work, ignore_errors=True)


def _ensure_locust() -> None:
    if shutil.which("locust", path=str(Path(PYTHON).parent)) is None:
        subprocess.run([PYTHON, "-m", "pip", "install", "--quiet", "locust"], check=True)


def _environment(work: Path) -> dict[str, str]:
    from cryptography.fernet import Fernet

    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", str(work)),
        "LANG": "C.UTF-8",
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "PORTAL_ENCRYPTION_KEY": Fernet.generate_key().decode(),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_COOKIES": "false",  # plain HTTP on loopback
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{DATABASE}",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/12",
        "CACHE_URL": "redis://127.0.0.1:6379/11",
        "PORTAL_VAR_DIR": str(work),
        "LOG_LEVEL": "WARNING",
        "API_RATE_LIMIT": "100000/min",
        "LOGIN_FAILURE_LIMIT": "1000",
    }


def _psql(sql: str) -> None:
    subprocess.run(
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-q", "-c", sql],
        check=True,
        capture_output=True,
    )


def _manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [PYTHON, str(REPO / "manage.py"), *args], env=env, cwd=REPO, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{result.stderr}")
    return result.stdout


# Run inside `manage.py shell`: the people, user 0's jobs, and a login on the dev cluster if up.
PEOPLE = """
import json, sys
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone
from guidance.models import Cluster
from jobs.models import ClusterAccount, Job, JobState
users, jobs, active, password = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
User = get_user_model()
people = [User.objects.create_user(f"load-{i}", password=password) for i in range(users)]
polled = "no"
try:
    call_command("register_devcluster", "load-0", verbosity=0)
    account = ClusterAccount.objects.get(owner=people[0], cluster__slug="local")
    polled = "yes"
except Exception as error:
    cluster = Cluster.objects.get(slug="narval")
    account = ClusterAccount.objects.create(
        owner=people[0], cluster=cluster, username="load", public_key="-",
        private_key_encrypted="-",
    )
now = timezone.now()
def made(person, account, count, active, first_id):
    return Job.objects.bulk_create(
        Job(
            owner=person, account=account, name=f"job-{i}", script="#!/bin/bash\\ntrue\\n",
            slurm_id=str(first_id + i), submitted=now, exit_code=0,
            state=JobState.RUNNING if i < active else JobState.COMPLETED,
        )
        for i in range(count)
    )
shown = {"load-0": [job.pk for job in made(people[0], account, jobs, active, 900000)[:100]]}
# The others: 20 ended jobs each on a login nobody polls (their pages, not the poller's work).
narval = Cluster.objects.get(slug="narval")
for number, person in enumerate(people[1:], start=1):
    theirs = ClusterAccount.objects.create(
        owner=person, cluster=narval, username=person.username, public_key="-",
        private_key_encrypted="-",
    )
    shown[person.username] = [job.pk for job in made(person, theirs, 20, 0, 800000 + number * 20)]
print(json.dumps(shown), polled)
"""


def _people_and_jobs(env, users: int, jobs: int, active: int) -> tuple[str, str]:
    code = Path(tempfile.mkstemp(suffix=".py")[1])
    code.write_text(PEOPLE)
    try:
        result = subprocess.run(
            [PYTHON, str(REPO / "manage.py"), "shell", "-c",
             f"import sys; sys.argv = ['', '{users}', '{jobs}', '{active}', '{PASSWORD}']; "
             f"exec(open('{code}').read())"],
            env=env, cwd=REPO, capture_output=True, text=True, check=True,
        )  # fmt: skip
    finally:
        code.unlink()
    shown, polled = result.stdout.strip().splitlines()[-1].rsplit(" ", 1)
    return shown, polled  # JSON: each person's name -> some of their job ids


def _start(env: dict[str, str], work: Path) -> list[subprocess.Popen]:
    cores = os.cpu_count() or 2
    commands = [
        [PYTHON, "-m", "gunicorn", "portal.wsgi", "--bind", f"127.0.0.1:{PORT}",
         "--workers", str(2 * cores + 1), "--access-logfile", "-"],
        [PYTHON, "-m", "celery", "-A", "portal", "worker", "--queues", "celery,poll",
         "--pool=solo", "--loglevel=WARNING"],
        [PYTHON, "-m", "celery", "-A", "portal", "beat", "--loglevel=WARNING",
         "--schedule", str(work / "beat-schedule")],
    ]  # fmt: skip
    processes = []
    for number, command in enumerate(commands):
        with (work / f"process-{number}.log").open("w") as log:
            processes.append(
                subprocess.Popen(
                    command, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )  # fmt: skip
    return processes


def _wait_for_web() -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{PORT}/accounts/login/", timeout=2)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit("gunicorn did not answer") from None
            time.sleep(0.5)


def _report(prefix: Path, args, before, after, polled: str) -> None:
    with open(f"{prefix}_stats.csv") as handle:
        rows = list(csv.DictReader(handle))
    print(
        f"\n{args.users} users for {args.seconds} s; {args.jobs:,} jobs of one user, "
        f"{args.active:,} active; poller asking the dev cluster: {polled}; "
        f"{os.cpu_count()} cores, load average {before[0]:.2f} before, {after[0]:.2f} after"
    )
    print(
        f"{'page':28} {'requests':>8} {'errors':>6} {'req/s':>7} {'p50':>6} {'p95':>6} {'p99':>6}"
    )
    for row in rows:
        print(
            f"{row['Name'][:28]:28} {row['Request Count']:>8} {row['Failure Count']:>6} "
            f"{float(row['Requests/s']):7.1f} {row['50%']:>6} {row['95%']:>6} {row['99%']:>6}"
        )
    print("(milliseconds)")


# Run inside `manage.py shell`: the queries each page makes for user 0, with 10,000 jobs.
QUERIES = """
import sys
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.contrib.auth import get_user_model
client = Client()
client.force_login(get_user_model().objects.get(username="load-0"))
job = sys.argv[1]
for name, url, headers in [
    ("job list", "/jobs/", {}), ("job list, live rows", "/jobs/", {"HX-Request": "true"}),
    ("job page", f"/jobs/{job}/", {}), ("job page, live status", f"/jobs/{job}/",
    {"HX-Request": "true"}), ("live advice", "/jobs/new/?cluster=narval&dataset_gb=50"
    "&workload=training&gpu_count=1&hours=12&nodes=1&similar_runs=1&environment=none"
    "&command=python+t.py&results_dir=r&job_name=t", {"HX-Request": "true"}),
]:
    client.get(url, headers=headers)  # as in steady state: guidance already kept in memory
    with CaptureQueriesContext(connection) as queries:
        status = client.get(url, headers=headers).status_code
    print(f"{name:28} {status} {len(queries)} queries")
"""


def _report_queries(env: dict[str, str], job_id: int) -> None:
    result = subprocess.run(
        [PYTHON, str(REPO / "manage.py"), "shell", "-c",
         f"import sys; sys.argv = ['', '{job_id}']; exec({QUERIES!r})"],
        env=env | {"ALLOWED_HOSTS": "testserver"}, cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    print("\nDatabase queries per page (user 0):")
    print(result.stdout or result.stderr[-2000:])


if __name__ == "__main__":
    main()
