"""The clusters' published guidance, kept in each process's memory between requests.

Every live update of the composer and the advice page needs a cluster with all its facts, which
costs four queries and most of the request's time, while admins change guidance rarely. So each
process keeps the clusters it has loaded for as long as the revision token in the database stays
the same: one small query per request. Saving or deleting any guidance that `cluster_facts` reads
replaces the token right after it, in its transaction if it has one (the signals below), so an
edit shows at once in every process. QuerySet.update() and raw SQL send no signal: call bump()
after them.

The documents that sources link to (guidance.citations) are kept the same way, under the same
token, and a request reads the token once for both: so citing dozens of sources on a page costs
no query of its own.

Guidance is the same for every user: nothing of a user's own is kept here.
"""

import pickle
import threading
import uuid
from collections.abc import Callable
from typing import Any

from django.core.signals import request_finished, request_started
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models.signals import post_delete, post_migrate, post_save

from guidance import models
from guidance.nul import NUL

# What cluster_facts reads, through Cluster.objects.with_facts().
KEPT_MODELS = (
    models.Cluster,
    models.GpuType,
    models.Partition,
    models.StorageTier,
    models.Policy,
    models.JobEnvironment,
    models.SiteRule,
    models.CodeRuleSetting,
)
_REVISION_ID = 1

# (token, {slug: pickled cluster}): pickled so that each request gets its own instances.
_kept: tuple[str, dict[str, bytes]] = ("", {})
# (token, what the loader made of the documents): read-only, so shared as it is.
_kept_documents: tuple[str, Any] = ("", None)
# The token this thread read during the request it serves, if it read one.
_this_request = threading.local()


def cluster_with_facts(slug: str) -> models.Cluster | None:
    """The cluster and everything cluster_facts reads of it, or None if there is no such one."""
    global _kept
    if NUL in slug:  # no slug has one, and PostgreSQL fails the lookup
        return None
    token = _current_token()
    if token is None:  # no revision row (a flushed test database): nothing can be trusted
        return _load(slug)
    kept_token, clusters = _kept
    if kept_token != token:
        clusters = {}
        _kept = (token, clusters)
    if slug not in clusters:
        cluster = _load(slug)
        if cluster is None:  # unknown slugs are not kept: anyone can ask for any number of them
            return None
        clusters[slug] = pickle.dumps(cluster)
    return pickle.loads(clusters[slug])


def documents(load: Callable[[], Any]) -> Any:
    """What load() makes of the documents, loaded again only when the token has changed."""
    global _kept_documents
    token = getattr(_this_request, "token", None) or _current_token()
    if token is None:
        return load()
    kept_token, kept = _kept_documents
    if kept_token != token:
        kept = load()
        _kept_documents = (token, kept)
    return kept


def bump(using: str = DEFAULT_DB_ALIAS, **_signal_kwargs) -> None:
    """Makes every process load guidance again. A token is never reused, so one from a
    transaction that was rolled back cannot come back with other data."""
    token = uuid.uuid4().hex
    revisions = models.Revision.objects.using(using)
    if not revisions.filter(pk=_REVISION_ID).update(token=token):
        revisions.create(pk=_REVISION_ID, token=token)


def connect_signals() -> None:
    for model in KEPT_MODELS:
        post_save.connect(bump, sender=model, dispatch_uid=f"guidance-bump-save-{model.__name__}")
        post_delete.connect(bump, sender=model, dispatch_uid=f"guidance-bump-del-{model.__name__}")
    # Documents change only by an import: each one saved or deleted makes every process read
    # the documents again.
    post_save.connect(bump, sender=models.Document, dispatch_uid="guidance-bump-save-Document")
    post_delete.connect(bump, sender=models.Document, dispatch_uid="guidance-bump-del-Document")
    request_started.connect(_forget_token, dispatch_uid="guidance-forget-token-start")
    request_finished.connect(_forget_token, dispatch_uid="guidance-forget-token-end")
    # A data migration saves through historical models, which send no signal to bump().
    post_migrate.connect(_bump_after_migrate, dispatch_uid="guidance-bump-migrate")


def _bump_after_migrate(using: str = DEFAULT_DB_ALIAS, **_signal_kwargs) -> None:
    if models.Revision._meta.db_table in connections[using].introspection.table_names():
        bump(using)  # (not when migrated back to before the table)


def _forget_token(**_signal_kwargs) -> None:
    _this_request.token = None


def _current_token() -> str | None:
    # Raw SQL: the ORM would spend longer building this query than the database answering it.
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT token FROM {connection.ops.quote_name(models.Revision._meta.db_table)} "
            "WHERE id = %s",
            [_REVISION_ID],
        )
        row = cursor.fetchone()
    _this_request.token = row[0] if row else None
    return _this_request.token


def _load(slug: str) -> models.Cluster | None:
    return models.Cluster.objects.with_facts().filter(slug=slug).first()
