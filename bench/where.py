"""Time of "Where should this run?" for N logins: the whole ranking (each login's plan, every
`--test-only` at once, the ranking) against the slowest single answer.

With no cluster to reach, each login's `sbatch --test-only` is stood in for by an answer that
takes `delay` seconds (a little more for each further login, as real logins differ), through the
seam the ranking takes (jobs.compose.estimates.Ask). Runs the Django stack in-process on a fresh
SQLite database; a user has one login per cluster, so N is at most the five seeded Slurm clusters.
Usage: .venv/bin/python bench/where.py [logins] [delay seconds] [runs]   (default 4 1.0 3)
"""

import os
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

LOGINS = int(sys.argv[1]) if len(sys.argv) > 1 else 4
DELAY = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
RUNS = int(sys.argv[3]) if len(sys.argv) > 3 else 3
ROOT = Path(__file__).resolve().parent.parent
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

    from guidance.models import Cluster
    from jobs.cluster import keys
    from jobs.compose import where
    from jobs.models import ClusterAccount
    from jobs.slurm.sbatch import WouldStart

    if not 1 <= LOGINS <= len(CLUSTERS):
        sys.exit(f"logins: 1 to {len(CLUSTERS)}, one per seeded Slurm cluster")
    call_command("migrate", verbosity=0)
    call_command("seed_guidance", verbosity=0, stdout=open(os.devnull, "w"))  # noqa: SIM115
    user = get_user_model().objects.create_user("bench")
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


if __name__ == "__main__":
    main()
