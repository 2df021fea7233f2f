"""Time of "Where should this run?" for N logins: the whole ranking (each login's plan, every
`--test-only` at once, the ranking) against the slowest single answer.

With no cluster to reach, each login's `sbatch --test-only` is stood in for by an answer that
takes `delay` seconds (a little more for each further login, as real logins differ), through the
seam the ranking takes (jobs.compose.estimates.Ask). Runs the Django stack in-process on a fresh
SQLite database; a user has one login per cluster, so N is at most the five seeded Slurm clusters.
Usage: .venv/bin/python bench/where.py [logins] [delay seconds] [runs]   (default 4 1.0 3)

With --real the answers are Slurm's own, from two real clusters: both dev clusters
(docker/devcluster up, up --second), registered by register_devcluster and each once more under
another slug (tests/registrations.py), give the user 4 logins on two clusters. Each run times
every login's `sbatch --test-only` alone, one after the other, then the whole ranking: first on
the connections the portal keeps open, then each on new connections (connect and key exchange
included), as after the pool's idle timeout.
Usage: .venv/bin/python bench/where.py --real [runs]   (default 5)
"""

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

REAL = sys.argv[1:2] == ["--real"]
ARGS = sys.argv[2:] if REAL else sys.argv[1:]


def _arg(index: int, kind: type, default):
    return kind(ARGS[index]) if len(ARGS) > index else default


LOGINS = 4 if REAL else _arg(0, int, 4)
DELAY = _arg(1, float, 1.0)  # of the stood-in answers
RUNS = _arg(0, int, 5) if REAL else _arg(2, int, 3)
ROOT = Path(__file__).resolve().parent.parent
DEVCLUSTER = ROOT / "docker" / "devcluster" / "devcluster"
# A user has one login per cluster: the logins are on the seeded Slurm clusters, one each.
CLUSTERS = ("graham", "cedar", "beluga", "narval", "processing")
JOB = {
    "cluster": "graham",
    "job_name": "resnet",
    "workload": "training",
    "dataset_gb": "50",
    "data_location": "project",
    "data_path": "/project/def-someuser/data",
    "gpu_count": "1",
    "hours": "12",
    "nodes": "1",
    "similar_runs": "1",
    "environment": "none",
    "command": "python train.py",
    "results_dir": "$HOME/results",
}
# The same job for the dev clusters: composed for the first, planned again for each login.
REAL_JOB = JOB | {
    "cluster": "local",
    "dataset_gb": "1",
    "data_location": "home",
    "data_path": "$HOME/data",
    "gpu_type": "a100",
    "hours": "0.5",
}


def main() -> None:
    var = tempfile.mkdtemp(prefix="bench-where-")
    os.environ.update(
        DJANGO_SETTINGS_MODULE="portal.settings",
        DEBUG="false",
        SECRET_KEY="bench-only-secret-key-not-for-production-0123456789",
        PORTAL_ENCRYPTION_KEY="YmVuY2gtb25seS1rZXktbm90LXByb2R1Y3Rpb24hISE=",
        PORTAL_VAR_DIR=var,
        DATABASE_URL=f"sqlite:///{var}/db.sqlite3",
        ALLOWED_HOSTS="testserver",
        SECURE_COOKIES="false",
        LOG_LEVEL="WARNING",
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    if not REAL and not 1 <= LOGINS <= len(CLUSTERS):
        sys.exit(f"logins: 1 to {len(CLUSTERS)}, one per seeded Slurm cluster")
    call_command("migrate", verbosity=0)
    call_command("seed_guidance", verbosity=0, stdout=open(os.devnull, "w"))  # noqa: SIM115
    user = get_user_model().objects.create_user("bench")
    if REAL:
        real(user)
    else:
        stood_in(user)


def stood_in(user) -> None:
    from guidance.models import Cluster
    from jobs.cluster import keys
    from jobs.compose import where
    from jobs.models import ClusterAccount
    from jobs.slurm.sbatch import WouldStart

    pair = keys.generate_keypair()
    for i in range(LOGINS):
        ClusterAccount.objects.create(
            owner=user,
            cluster=Cluster.objects.get(slug=CLUSTERS[i]),
            username=f"user{i}",
            public_key=pair.public_line,
            private_key_encrypted=keys.encrypt(pair.private_pem),
        )

    answers: list[float] = []
    lock = threading.Lock()

    def slow_test_only(account: ClusterAccount, script: str) -> WouldStart:
        began = time.perf_counter()
        time.sleep(DELAY * (1 + 0.02 * int(account.username.removeprefix("user"))))
        with lock:
            answers.append(time.perf_counter() - began)
        return WouldStart(datetime(2030, 1, 1), 1, ["n1"], "p")

    where.rank(user, JOB, budget=DELAY * 3 + 5, ask=slow_test_only)  # warm up
    print(f"{LOGINS} logins on {LOGINS} clusters, each --test-only {DELAY:g} s or more")
    for run in range(RUNS):
        answers.clear()
        began = time.perf_counter()
        ranked = where.rank(user, JOB, budget=DELAY * 3 + 5, ask=slow_test_only)
        whole = time.perf_counter() - began
        assert len(ranked) == LOGINS and all(p.start for p in ranked), ranked
        slowest = max(answers)
        print(
            f"run {run + 1}: slowest single answer {slowest:.3f} s  whole ranking {whole:.3f} s  "
            f"ratio {whole / slowest:.2f}"
        )


def real(user) -> None:
    import io

    from django.core.management import call_command

    from jobs.cluster import remote
    from jobs.cluster.gateway import gateway
    from jobs.compose import where
    from jobs.models import ClusterAccount
    from jobs.slurm.sbatch import WouldStart
    from tests.registrations import login_on, register_again

    for which in ([], ["--second"]):
        subprocess.run([str(DEVCLUSTER), "up", *which], check=True, stdout=subprocess.DEVNULL)
        call_command("register_devcluster", user.username, *which, stdout=io.StringIO())
    for slug in ("local", "local-b"):
        account = ClusterAccount.objects.get(owner=user, cluster__slug=slug)
        login_on(register_again(account.cluster, f"{slug}-again"), account)

    asked: list[tuple[ClusterAccount, str]] = []

    def recording(account: ClusterAccount, script: str) -> WouldStart:
        asked.append((account, script))
        return remote.test_only(account, script)

    where.rank(user, REAL_JOB, ask=recording)  # the scripts, and the connections opened
    logins = sorted(account.cluster.slug for account, _ in asked)
    print(f"{len(asked)} logins on two clusters ({', '.join(logins)}), Slurm's own --test-only")

    def measure(fresh: bool) -> tuple[dict[str, float], float]:
        """Each login's --test-only alone, then the whole ranking; `fresh`: each on new
        connections (connect and key exchange included), else on the ones the pool keeps."""
        alone = {}
        for account, script in asked:
            if fresh:
                gateway.close_all()
            began = time.perf_counter()
            remote.test_only(account, script)
            alone[account.cluster.slug] = time.perf_counter() - began
        if fresh:
            gateway.close_all()
        began = time.perf_counter()
        ranked = where.rank(user, REAL_JOB)
        whole = time.perf_counter() - began
        assert len(ranked) == len(asked) and all(p.start for p in ranked), ranked
        return alone, whole

    for fresh, how in ((False, "open connections"), (True, "new connections")):
        ratios = []
        for run in range(RUNS):
            alone, whole = measure(fresh)
            slowest = max(alone.values())
            ratios.append(whole / slowest)
            singles = " ".join(f"{took * 1000:.0f}" for _, took in sorted(alone.items()))
            print(
                f"{how}, run {run + 1}: each --test-only alone {singles} ms, slowest "
                f"{slowest:.3f} s  whole ranking {whole:.3f} s  ratio {whole / slowest:.2f}"
            )
        print(f"{how}: median ratio {statistics.median(ratios):.2f} over {RUNS} runs")


if __name__ == "__main__":
    main()
