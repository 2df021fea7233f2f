"""Each user's login on each cluster: a key pair the portal makes, and a connection test."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST, require_safe

from guidance.models import Cluster
from jobs.cluster import keys, remote
from jobs.cluster.errors import ClusterError
from jobs.models import ClusterAccount


def _clusters():
    return [c for c in Cluster.objects.order_by("name") if c.accepts_logins]


@login_required
@require_safe
def accounts(request: HttpRequest) -> HttpResponse:
    mine = {a.cluster_id: a for a in ClusterAccount.objects.filter(owner=request.user)}
    rows = [
        {
            "cluster": cluster,
            "account": mine.get(cluster.pk),
            "authorized_keys": (
                keys.authorized_keys_line(mine[cluster.pk].public_key) if cluster.pk in mine else ""
            ),
        }
        for cluster in _clusters()
    ]
    return render(request, "jobs/accounts.html", {"rows": rows})


@login_required
@require_POST
def account_create(request: HttpRequest, slug: str) -> HttpResponse:
    cluster = get_object_or_404(Cluster, slug=slug)
    if not cluster.accepts_logins:
        messages.error(request, f"{cluster.name} takes no logins from the portal yet.")
        return redirect("jobs:accounts")
    pair = keys.generate_keypair()
    account = ClusterAccount.objects.login_of(request.user, cluster)
    account = account or ClusterAccount(owner=request.user, cluster=cluster)
    account.username = request.POST.get("username", "").strip()
    account.public_key = pair.public_line
    account.private_key_encrypted = keys.encrypt(pair.private_pem)
    account.tested_at, account.test_result = None, ""
    try:
        account.full_clean(exclude=["owner", "cluster"])
    except ValidationError:
        messages.error(
            request,
            "Enter your user name on the cluster: lower-case letters, digits, '.', '_' or '-'.",
        )
        return redirect("jobs:accounts")
    account.save()
    messages.success(
        request,
        f"A new key for {account}: add the line below to ~/.ssh/authorized_keys on "
        f"{cluster.name}, then test the connection.",
    )
    return redirect("jobs:accounts")


@login_required
@require_POST
def account_test(request: HttpRequest, pk: int) -> HttpResponse:
    account = get_object_or_404(ClusterAccount, pk=pk, owner=request.user)
    try:
        version = remote.test_connection(account)
    except ClusterError as error:
        account.test_result = error.message
        messages.error(request, f"Could not log in as {account}: {error.message}")
    else:
        account.test_result = f"OK: {version}"
        messages.success(request, f"Logged in as {account}: {version}.")
    account.tested_at = timezone.now()
    account.save(update_fields=["tested_at", "test_result"])
    return redirect("jobs:accounts")
