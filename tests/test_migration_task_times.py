"""Jobs saved before the one-task figures get them from what was saved: a job of one task its own
time and limit, an array its longest task (from its task rows) and the limit each task had."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = [("jobs", "0022_plans_and_token_actions")]
AFTER = [("jobs", "0023_task_times")]


def _migrate(to):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(to)
    return executor.loader.project_state(to).apps


@pytest.mark.django_db(transaction=True)
def test_saved_jobs_get_one_tasks_figures():
    old = _migrate(BEFORE)
    User = old.get_model("auth", "User")
    Cluster = old.get_model("guidance", "Cluster")
    Account = old.get_model("jobs", "ClusterAccount")
    Job = old.get_model("jobs", "Job")
    Task = old.get_model("jobs", "JobTask")
    owner = User.objects.create(username="alice")
    cluster = Cluster.objects.create(slug="c", name="C")
    account = Account.objects.create(owner=owner, cluster=cluster, username="alice")
    one = Job.objects.create(
        owner=owner, account=account, name="one", elapsed_seconds=41, time_limit_seconds=120
    )
    # Six tasks of an hour each; five started, the longest ran 15 minutes.
    array = Job.objects.create(
        owner=owner,
        account=account,
        name="array",
        elapsed_seconds=3000,
        time_limit_seconds=5 * 3600,
    )
    ended = timezone.now()
    for n, minutes in enumerate([10, 15, 5, 10, 10, None], start=1):
        started = ended - timedelta(minutes=minutes) if minutes else None
        Task.objects.create(
            job=array, task_id=str(n), slurm_id=f"9_{n}", state="COMPLETED", started=started,
            ended=ended if started else None,
        )  # fmt: skip

    new = _migrate(AFTER).get_model("jobs", "Job")
    one, array = new.objects.get(pk=one.pk), new.objects.get(pk=array.pk)
    assert (one.longest_task_seconds, one.task_time_limit_seconds) == (41, 120)
    assert (array.longest_task_seconds, array.task_time_limit_seconds) == (15 * 60, 3600)
    _migrate(_latest())


def _latest():
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()
