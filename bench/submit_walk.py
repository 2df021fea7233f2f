"""The walk of one submission through the portal's modules: which of its modules the Celery
task's work enters, in order (a module entered again right away counts once), on the local
cluster with the connection already open. A GPU job, so that the monitoring block is filled in.
Usage: .venv/bin/python bench/submit_walk.py
"""

import sys

from cluster_setup import ROOT, portal_with_local_cluster

SCRIPT = (
    "#!/bin/bash\n#SBATCH --hold\n#SBATCH --gres=gpu:a100:1\n"
    "#SBATCH --output=portal-jobs/walk/slurm-%j.out\n{start}\n{stop}\ntrue\n"
)
OURS = tuple(str(ROOT / package) for package in ("jobs", "guidance", "portal"))


def _walk(submit) -> list[str]:
    walk: list[str] = []

    def record(frame, event, arg):
        path = frame.f_code.co_filename
        if event == "call" and path.startswith(OURS):
            module = path.removeprefix(str(ROOT) + "/").removesuffix(".py").replace("/", ".")
            if not walk or walk[-1] != module:
                walk.append(module)

    sys.setprofile(record)
    try:
        submit()
    finally:
        sys.setprofile(None)
    return walk


def main() -> None:
    account = portal_with_local_cluster()
    from jobs import tasks
    from jobs.cluster.gateway import gateway
    from jobs.cluster.remote import login_for
    from jobs.models import Job
    from jobs.script_markers import MONITORING_START, MONITORING_STOP

    script = SCRIPT.format(start=MONITORING_START, stop=MONITORING_STOP)

    def submit() -> Job:
        job = Job.objects.create(owner=account.owner, account=account, name="walk", script=script)
        tasks.submit_job.apply(args=[job.pk])
        job.refresh_from_db()
        assert job.slurm_id, job.message
        return job

    warm = submit()  # connection open, code loaded, the sampler's source read
    job = Job.objects.create(owner=account.owner, account=account, name="walk", script=script)
    walk = _walk(lambda: tasks.submit_job.apply(args=[job.pk]))
    job.refresh_from_db()
    print(" -> ".join(walk))
    print(f"{len(walk)} module entries, {len(set(walk))} modules")
    # Its own jobs only: other work of the test user may be queued on the cluster.
    gateway.run(login_for(account), ["scancel", warm.slurm_id, job.slurm_id])


if __name__ == "__main__":
    main()
