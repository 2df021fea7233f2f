"""Each user's login on each cluster: a key pair the portal makes, and a connection test."""

import logging
from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST, require_safe

from guidance.models import Cluster
from jobs.cluster import keys, remote
from jobs.cluster.errors import ClusterError
from jobs.models import ClusterAccount, Composition

logger = logging.getLogger(__name__)
WRAPPER = Path(settings.BASE_DIR) / "docker" / "cluster-side" / "portal-remote"


def _key_line(account: ClusterAccount | None) -> str:
    """The authorized_keys line for the account's key: through an automation node, the key runs
    only the portal's wrapper."""
    if account is None:
        return ""
    command = keys.WRAPPER_COMMAND if account.through_automation_node else ""
    try:
        return keys.authorized_keys_line(
            account.public_key, from_hosts=settings.PORTAL_SSH_FROM, command=command
        )
    except ValueError:
        logger.error("PORTAL_SSH_FROM is not a list of addresses: key lines go without from=")
        return keys.authorized_keys_line(account.public_key, command=command)


def _waiting(user, clusters: list[Cluster]) -> dict[int, list[Composition]]:
    """The user's compositions for each cluster, newest first: "Save and submit" without a login
    saves them and leads here, so the page says where they are."""
    by_slug = {c.slug: c.pk for c in clusters}
    waiting: dict[int, list[Composition]] = {}
    for composition in Composition.objects.filter(owner=user).only("name", "fields", "updated"):
        if (pk := by_slug.get(composition.fields.get("cluster"))) is not None:
            waiting.setdefault(pk, []).append(composition)
    return waiting


def _not_yet(request: HttpRequest, cluster: Cluster) -> dict:
    """Why `cluster` takes no logins yet, and what fixes it: for staff a link to the admin page,
    for users whom to ask."""
    if not cluster.login_host:
        why = "no login host is registered for it"
        ask = "register its login host and confirm its key"
        fix, fix_url = (
            "Set its login host",
            reverse("admin:guidance_cluster_change", args=[cluster.pk]),
        )
    else:
        why = f"no admin has confirmed the host key of {cluster.login_host} yet"
        ask = "confirm it"
        fix, fix_url = (
            "Check and confirm its host key",
            reverse("cluster_host_key", args=[cluster.pk]),
        )
    return {"why": why, "ask": ask, "fix": fix, "fix_url": fix_url if request.user.is_staff else ""}


@login_required
@require_safe
def accounts(request: HttpRequest) -> HttpResponse:
    # Every cluster that runs scripts is listed: one that takes no logins yet says why, since
    # "Save and submit" without a login leads here whatever the cluster.
    clusters = [c for c in Cluster.objects.order_by("name") if c.takes_scripts]
    mine = {a.cluster_id: a for a in ClusterAccount.objects.filter(owner=request.user)}
    waiting = _waiting(request.user, [c for c in clusters if c.pk not in mine])
    rows = [
        {
            "cluster": cluster,
            "account": mine.get(cluster.pk),
            "authorized_keys": _key_line(mine.get(cluster.pk)),
            "not_yet": None if cluster.accepts_logins else _not_yet(request, cluster),
            "waiting": waiting.get(cluster.pk, [])[:3],
            "more_waiting": len(waiting.get(cluster.pk, [])) > 3,
        }
        for cluster in clusters
    ]
    return render(request, "jobs/accounts.html", {"rows": rows})


@login_required
@require_POST
def account_route(request: HttpRequest, pk: int) -> HttpResponse:
    """Whether the login goes through the cluster's automation node, with the wrapper."""
    account = get_object_or_404(ClusterAccount, pk=pk, owner=request.user)
    account.through_automation_node = request.POST.get("through_automation_node") == "on"
    account.tested_at, account.test_result = None, ""
    account.save(update_fields=["through_automation_node", "tested_at", "test_result"])
    where = "the automation node" if account.through_automation_node else "the login node"
    messages.success(
        request, f"{account} now goes through {where}: install its key line below, then test."
    )
    return redirect("jobs:accounts")


@login_required
@require_safe
def wrapper(request: HttpRequest) -> HttpResponse:
    """The wrapper a site's automation node runs as the key's forced command."""
    response = HttpResponse(WRAPPER.read_bytes(), content_type="text/x-python")
    response["Content-Disposition"] = 'attachment; filename="portal-remote"'
    return response


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
