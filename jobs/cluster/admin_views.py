"""Admin pages that talk to a cluster: pin its login host's key, import its partitions."""

from django.contrib import admin, messages
from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from guidance.models import Cluster
from jobs.cluster import importer, remote
from jobs.cluster.errors import ClusterError
from jobs.models import ClusterAccount, no_login


@staff_member_required
@require_http_methods(["GET", "HEAD", "POST"])
def host_key(request: HttpRequest, pk: int) -> HttpResponse:
    """Shows the key the login host presents; pins it only when an admin confirms it."""
    cluster = get_object_or_404(Cluster, pk=pk)
    change_url = f"/admin/guidance/cluster/{cluster.pk}/change/"
    if not cluster.login_host:
        messages.error(request, "Set the cluster's login host first.")
        return redirect(change_url)
    try:
        presented = remote.host_key(cluster.login_host, cluster.login_port)
    except ClusterError as error:
        messages.error(request, f"Could not read the host key: {error.message}")
        return redirect(change_url)
    if request.method == "POST":
        if request.POST.get("fingerprint") != presented.fingerprint:
            messages.error(request, "The host key changed while you looked: check it again.")
            return redirect(request.path)
        cluster.host_key, cluster.host_key_fingerprint = presented.line, presented.fingerprint
        cluster._change_reason = f"Host key pinned: {presented.fingerprint}"
        cluster.save()
        messages.success(request, f"Pinned {presented.fingerprint} for {cluster.login_host}.")
        return redirect(change_url)
    ctx = {
        **admin.site.each_context(request),  # the site's header and title, as on its own pages
        "cluster": cluster,
        "presented": presented,
        "same": presented.line.split()[:2] == cluster.host_key.split()[:2],
        "title": f"Host key of {cluster.login_host}",
    }
    return render(request, "jobs/admin_host_key.html", ctx)


@staff_member_required
@require_http_methods(["GET", "HEAD", "POST"])
def import_partitions(request: HttpRequest, pk: int) -> HttpResponse:
    """Reads the cluster's GPU partitions from Slurm through the admin's own login; shows what
    would change, and saves it when the admin confirms. Admins annotate the result afterwards."""
    cluster = get_object_or_404(Cluster, pk=pk)
    change_url = f"/admin/guidance/cluster/{cluster.pk}/change/"
    account = ClusterAccount.objects.login_of(request.user, cluster)
    if account is None:
        to = "under “Cluster logins” in the portal first: importing reads Slurm through it"
        messages.error(request, no_login(cluster, to))
        return redirect(change_url)
    try:
        found = remote.read_partitions(remote.login_for(account))
    except ClusterError as error:
        messages.error(request, f"Could not read the partitions: {error.message}")
        return redirect(change_url)
    if request.method == "POST":
        saved = importer.save_partitions(cluster, found)
        names = ", ".join(p.name for p in saved) or "none"
        messages.success(request, f"Imported {len(saved)} GPU partition(s) from Slurm: {names}.")
        return redirect(change_url)
    existing = {p.name: p for p in cluster.partitions.select_related("gpu_type")}
    rows = [(partition, existing.get(partition.name)) for partition in found]
    ctx = {
        **admin.site.each_context(request),
        "cluster": cluster,
        "rows": rows,
        "title": f"Import partitions of {cluster.name}",
    }
    return render(request, "jobs/admin_import_partitions.html", ctx)
