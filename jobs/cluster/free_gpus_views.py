"""The GPUs free right now on each cluster, per node type and GPU type, from the poller's
cluster-wide read (jobs.cluster.cluster_load): a page of its own and a box beside the composer's
GPU type. Nothing here asks the cluster: the figures come with their age."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from guidance import published
from guidance.models import Cluster
from jobs.models import ClusterLoad


def cluster_gpus(cluster: Cluster) -> dict:
    """What the templates and the API show of one cluster: its rows, when they were read, and
    why the last read failed, if it did."""
    load = ClusterLoad.objects.filter(cluster=cluster).first()
    return {
        "cluster": cluster,
        "rows": load.gpus if load else [],
        "read_at": load.read_at if load else None,
        "error": load.error if load else "",
    }


@login_required
@require_safe
def free_gpus(request: HttpRequest) -> HttpResponse:
    clusters = [cluster_gpus(cluster) for cluster in Cluster.objects.order_by("name")]
    read = [c for c in clusters if c["read_at"] or c["error"]]
    unread = [c["cluster"] for c in clusters if not (c["read_at"] or c["error"])]
    return render(request, "jobs/free_gpus.html", {"clusters": read, "unread": unread})


@login_required
@require_safe
def free_gpus_brief(request: HttpRequest) -> HttpResponse:
    """The box beside the composer's GPU type: the chosen cluster's free GPUs."""
    slug = request.GET.get("cluster", "")
    cluster = published.cluster_with_facts(slug) if slug else None
    context = cluster_gpus(cluster) if cluster else {"cluster": None}
    return render(request, "jobs/free_gpus.html#brief", context)
