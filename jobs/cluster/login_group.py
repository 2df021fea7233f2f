"""One reading per cluster login. Portal users who register the same Unix user on the same
cluster (a lab's shared account) are one login group: each poll cycle reads it once, with one
squeue and one sacct for the active jobs of all of them and one history read, through one of
their logins (the group's poller), whose hold, back-off and history window stand for the group.

Each Slurm job is one Job row: a portal job is its submitter's; a job found in accounting
(submitted outside the portal) is the poller's owner's. Every member sees the group's jobs
(Job.objects.visible_to); only a job's owner acts on it.
"""

from datetime import datetime

from django.db.models import QuerySet

from jobs.cluster import remote
from jobs.cluster.errors import ClusterError, ErrorKind
from jobs.models import ClusterAccount, Job

# How a login test that worked begins (jobs.cluster.login_views.account_test).
TESTED_OK = "OK"


def members(account: ClusterAccount) -> QuerySet[ClusterAccount]:
    """The logins of the account's group, itself included."""
    return ClusterAccount.objects.filter(cluster_id=account.cluster_id, username=account.username)


def jobs_of(account: ClusterAccount) -> QuerySet[Job]:
    """The jobs of every login of the account's group."""
    return Job.objects.filter(
        account__cluster_id=account.cluster_id, account__username=account.username
    )


def _preference(account: ClusterAccount) -> tuple:
    # A login with a key that last tested fine first; the oldest first among equals, so that the
    # choice stays put from one cycle to the next.
    tested_ok = account.test_result.startswith(TESTED_OK)
    return (not account.private_key_encrypted, not tested_ok, account.pk)


def pollers(wanted: QuerySet[ClusterAccount]) -> list[int]:
    """The pk of one login per group that any of `wanted` belongs to: the group's poller."""
    chosen: dict[tuple, ClusterAccount] = {}
    for account in ClusterAccount.objects.sharing_with(wanted).only(
        "pk", "cluster_id", "username", "private_key_encrypted", "test_result"
    ):
        group = (account.cluster_id, account.username)
        if group not in chosen or _preference(account) < _preference(chosen[group]):
            chosen[group] = account
    return sorted(account.pk for account in chosen.values())


def poll(account: ClusterAccount, since: datetime, slurm_ids: list[str]) -> remote.Snapshot:
    """remote.poll through the poller; where its key is refused (removed from authorized_keys,
    say), through the next member's that works, so that one user's key cannot stop the others'
    jobs. Any other failure is the cluster's, and another key would not help."""
    try:
        return remote.poll(account, since, slurm_ids)
    except ClusterError as error:
        if error.kind is not ErrorKind.AUTH_FAILED:
            raise
        refused = error
    for other in _others(account):
        try:
            return remote.poll(other, since, slurm_ids)
        except ClusterError as error:
            if error.kind is not ErrorKind.AUTH_FAILED:
                raise
    raise refused


def _others(account: ClusterAccount) -> list[ClusterAccount]:
    others = members(account).exclude(pk=account.pk).exclude(private_key_encrypted="")
    return sorted(others.select_related("cluster"), key=_preference)
