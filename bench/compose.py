"""Server time of the composer's live update: the htmx request that re-renders advice and script.

Runs the whole Django stack in-process (middleware, session, ORM on a fresh SQLite database,
engine, script, template) with the test client, so the figures are server time without the
network. Usage: .venv/bin/python bench/compose.py [requests]
"""

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REQUESTS = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
ROOT = Path(__file__).resolve().parent.parent
LIVE_UPDATE = {
    "cluster": "narval",
    "job_name": "resnet",
    "account": "def-someuser",
    "workload": "training",
    "dataset_gb": "50",
    "file_count": "200000",
    "data_location": "project",
    "data_path": "/project/def-someuser/data.tar",
    "gpu_count": "1",
    "hours": "72",
    "checkpointing": "on",
    "nodes": "1",
    "similar_runs": "1",
    "modules": "python/3.11 cuda",
    "environment": "requirements",
    "environment_path": "$HOME/requirements.txt",
    "command": 'python train.py --data "$DATA_PATH"',
    "results_dir": "$HOME/results",
}


def main() -> None:
    var = tempfile.mkdtemp(prefix="bench-compose-")
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
    from django.test import Client

    call_command("migrate", verbosity=0)
    call_command("seed_guidance", verbosity=0, stdout=open(os.devnull, "w"))  # noqa: SIM115
    call_command("seed_templates", verbosity=0, stdout=open(os.devnull, "w"))  # noqa: SIM115
    client = Client()
    client.force_login(get_user_model().objects.create_user("bench"))

    for name, url, headers in [
        ("composer live update (htmx)", "/jobs/new/", {"HX-Request": "true"}),
        ("composer full page", "/jobs/new/", {}),
        ("advice live update (htmx)", "/guidance/narval/advice/", {"HX-Request": "true"}),
    ]:
        for _ in range(20):  # warm up: templates compiled, connections open
            client.get(url, LIVE_UPDATE, headers=headers)
        times = []
        for i in range(REQUESTS):
            data = LIVE_UPDATE | {"dataset_gb": str(5 + i % 600)}  # memory, node-local, shared
            start = time.perf_counter()
            response = client.get(url, data, headers=headers)
            times.append((time.perf_counter() - start) * 1000)
            assert response.status_code == 200
        times.sort()
        print(
            f"{name:30s} n={REQUESTS}  median {statistics.median(times):6.2f} ms  "
            f"p95 {times[int(0.95 * len(times)) - 1]:6.2f} ms  "
            f"p99 {times[int(0.99 * len(times)) - 1]:6.2f} ms  max {times[-1]:6.2f} ms"
        )


if __name__ == "__main__":
    main()
