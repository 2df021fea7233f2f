"""The two ways the portal reaches the dev cluster, for tests that run both: through the login
node, and through the automation node (the key forced through the portal's wrapper, no SFTP)."""

from dataclasses import replace

from jobs.cluster import remote
from jobs.cluster.login import Login
from jobs.models import ClusterAccount

ROUTES = ("login node", "automation node")


def take_route(account: ClusterAccount, route: str) -> ClusterAccount:
    account.through_automation_node = route == "automation node"
    account.save(update_fields=["through_automation_node"])
    return account


def over_sftp(account: ClusterAccount) -> Login:
    """The account's login on the login node, whichever way the account goes: SFTP, which the
    automation node does not offer, puts in place what a test needs there."""
    cluster = account.cluster
    login = remote.login_for(account)
    return replace(login, host=cluster.login_host, port=cluster.login_port, commands_only=False)
