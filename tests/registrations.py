"""A cluster registered again under another slug, with a login on it: what publishing the same
Slurm cluster a second time gives, reached through the same sshd. For tests and benches of
several logins (a user has one login per cluster)."""

from guidance.models import Cluster, JobEnvironment, Policy
from jobs.models import ClusterAccount


def register_again(cluster: Cluster, slug: str, **changes) -> Cluster:
    """The cluster with its GPU types, node types, storage, policy and job environment, under
    another slug; `changes` set fields of the copy (its login port, say)."""
    source = Cluster.objects.get(pk=cluster.pk)
    gpu_types = list(source.gpu_types.all())
    partitions = list(source.partitions.all())
    related = [
        *source.storage_tiers.all(),
        *Policy.objects.filter(cluster=source),
        *JobEnvironment.objects.filter(cluster=source),
    ]
    copy = source
    copy.pk, copy.id, copy.slug, copy.name = None, None, slug, f"{source.name} ({slug})"
    for name, value in changes.items():
        setattr(copy, name, value)
    copy.save()
    new_type = {}
    for gpu_type in gpu_types:
        old = gpu_type.pk
        gpu_type.pk = gpu_type.id = None
        gpu_type.cluster = copy
        gpu_type.save()
        new_type[old] = gpu_type
    for partition in partitions:
        partition.pk = partition.id = None
        partition.cluster, partition.gpu_type = copy, new_type[partition.gpu_type_id]
        partition.save()
    for row in related:
        row.pk = row.id = None
        row.cluster = copy
        row.save()
    return copy


def login_on(cluster: Cluster, account: ClusterAccount) -> ClusterAccount:
    """The same Unix login and key as `account`, on `cluster`."""
    account = ClusterAccount.objects.get(pk=account.pk)
    account.pk = account.id = None
    account.cluster = cluster
    account.save()
    return account
