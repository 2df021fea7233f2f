"""Holds that die with the process that polls.

A running poll holds its logins (ClusterAccount.polled_until) and a cluster's reader
(ClusterReader.reading_until) for a short lease, LEASE_SECONDS, which a thread of the polling
process renews while the poll runs. A worker that is killed, or a pool process that dies, renews
nothing: its holds run out within a lease, and beat's next dispatch sends those logins again,
instead of leaving them unpolled (and their jobs shown as they were) until a long hold expired.
A worker that lives never loses its hold, however long its poll takes, so no login is polled by
two workers at once.
"""

import logging
import os
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from jobs.models import ClusterAccount, ClusterReader

logger = logging.getLogger("jobs.tasks")

# Shortest and longest lease: renewed three times a lease, it survives two missed renewals
# (a loaded machine, a slow database) before another worker may take the login.
MIN_LEASE_SECONDS = 3
MAX_LEASE_SECONDS = 30


def lease_seconds() -> float:
    """Half a poll period, so that a lost poll is sent again within two periods: the lease runs
    out, then the next beat (at most a period later) finds the login free."""
    return min(max(settings.POLL_SECONDS / 2, MIN_LEASE_SECONDS), MAX_LEASE_SECONDS)


def lease_end():
    return timezone.now() + timedelta(seconds=lease_seconds())


class _Renewer:
    """The holders whose polls run in this process, and the thread that renews their leases."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: Counter[str] = Counter()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = 0

    @contextmanager
    def keep(self, holder: str) -> Iterator[None]:
        renew([holder])  # the dispatch's long hold becomes a lease before any work is done
        with self._lock:
            self._running[holder] += 1
            self._start_once()
        try:
            yield
        finally:
            with self._lock:
                self._running[holder] -= 1
                if self._running[holder] <= 0:
                    del self._running[holder]

    def holders(self) -> list[str]:
        with self._lock:
            return list(self._running)

    def _start_once(self) -> None:
        # A forked pool process inherits the object but not the thread: it starts its own.
        if self._thread is not None and self._pid == os.getpid() and self._thread.is_alive():
            return
        self._pid = os.getpid()
        self._thread = threading.Thread(target=self._run, name="poll-lease-renewer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            self._wake.wait(lease_seconds() / 3)
            if holders := self.holders():
                renew(holders)
            else:
                connection.close()  # idle: no connection kept open for nothing


def renew(holders: list[str]) -> None:
    """Extends the leases these holders still have; a released hold stays released."""
    until = lease_end()
    try:
        held = ClusterAccount.objects.filter(polled_by__in=holders, polled_until__isnull=False)
        held.update(polled_until=until)
        reading = ClusterReader.objects.filter(read_by__in=holders, reading_until__isnull=False)
        reading.update(reading_until=until)
    except DatabaseError as error:
        # The next renewal tries again; past the lease another worker may poll these logins.
        logger.warning("Poll leases not renewed: %s", error)
        connection.close()


_renewer = _Renewer()


def keep(holder: str):
    """While inside, this process renews `holder`'s leases (nested uses are counted). Only a
    worker's tasks use it: a direct call (tests, a shell) holds for polling.POLL_HOLD_SECONDS."""
    return _renewer.keep(holder)
