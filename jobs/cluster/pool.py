"""The gateway's pool: a bounded number of open connections, one per cluster account and key, and
its one retry.

`ConnectionPool` is a part of `Gateway` (jobs/cluster/gateway.py), kept here because none of it
needs paramiko: the gateway supplies `_connect`, which opens and authenticates a connection, and
raises `Stale` when a connection fails an operation that may safely be redone.

A process holds at most `max_open` connections (SSH_POOL_SIZE), those being opened or closed
included, whatever the number of logins. A login with no connection when the pool is full takes
the place of the least recently used connection no thread is using; when every one is in use it
waits for one to be given back, up to the login's connect timeout, then fails with a retryable
"the portal is busy". A connection unused for `idle_seconds` (SSH_IDLE_SECONDS) is closed, and the
next command on its login opens it again.
"""

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

from django.conf import settings

from jobs.cluster import errors
from jobs.cluster.login import Login

# Logged under the gateway's name, with the rest of what it logs.
logger = logging.getLogger("jobs.cluster.gateway")


class Stale(Exception):
    """The connection failed before the operation changed anything, so it may be redone.

    `dead`: the connection itself is gone or hung and must be replaced; otherwise only the
    session that failed was (the SFTP one), and the connection is still good for others.
    """

    def __init__(self, detail: str, *, dead: bool) -> None:
        super().__init__(detail)
        self.dead = dead


class PooledConnection(Protocol):
    def is_active(self) -> bool: ...
    def close(self) -> None: ...


class ConnectionPool[C: PooledConnection]:
    """`max_open` and `idle_seconds` default to the settings, read at each use (tests change
    them); a pool built with its own keeps them."""

    def __init__(self, *, max_open: int | None = None, idle_seconds: float | None = None) -> None:
        self.connections_opened = 0
        self._max_open = max_open
        self._idle_seconds = idle_seconds
        self._lock = threading.Lock()
        # Signalled when a connection is given back or closed: room for a waiting login.
        self._freed = threading.Condition(self._lock)
        # Signalled by close_all, so that the sweeper ends without sleeping out its wait.
        self._emptied = threading.Condition(self._lock)
        # Least recently given back first: the order in which connections are evicted.
        self._pool: dict[tuple, C] = {}
        self._last_used: dict[tuple, float] = {}  # time.monotonic() when last given back
        self._users: dict[C, int] = {}  # threads using each connection now; absent when none
        self._opening = 0  # places taken by connections being opened
        self._closing = 0  # connections out of the pool whose close has not finished
        self._connecting: dict[tuple, threading.Lock] = {}
        self._sweeper: threading.Thread | None = None

    @property
    def max_open(self) -> int:
        return settings.SSH_POOL_SIZE if self._max_open is None else self._max_open

    @property
    def idle_seconds(self) -> float:
        return settings.SSH_IDLE_SECONDS if self._idle_seconds is None else self._idle_seconds

    def _connect(self, login: Login) -> C:
        raise NotImplementedError  # the gateway's

    @staticmethod
    def _pool_key(login: Login) -> tuple:
        # The key digest is part of the identity: a connection authenticated with one key is
        # never handed to a caller presenting another.
        digest = hashlib.sha256(login.private_key.encode()).hexdigest()
        return (login.host, login.port, login.username, login.host_key, digest)

    def open_count(self) -> int:
        """Connections open now, counting those being opened or closed: never above max_open."""
        with self._lock:
            return len(self._pool) + self._opening + self._closing

    # -- taking and giving back -------------------------------------------------------------

    def _acquire(self, key: tuple, login: Login) -> tuple[C, bool]:
        """Return a live connection for `login`, counted as in use, and whether it was pooled.

        The caller gives it back with `_release`, whatever happens.
        """
        deadline = time.monotonic() + login.connect_timeout
        with self._lock:
            connection = self._pooled(key)
            if connection is not None:
                return connection, True
            connecting = self._connecting.setdefault(key, threading.Lock())
        # One thread connects per account; the others wait for it and share the result. Its
        # wait is bounded (room, then connect), and theirs for room ends at their own deadline.
        with connecting:
            to_close: list[C] = []
            try:
                with self._lock:
                    connection = self._pooled(key)
                    if connection is not None:
                        return connection, True
                    to_close = self._make_room(key, deadline, login)
            finally:
                # Closed before connecting: the place each held is the one taken.
                for old in to_close:
                    old.close()
            try:
                connection = self._connect(login)
            except BaseException:
                with self._lock:
                    self._opening -= 1
                    self._freed.notify_all()
                raise
            with self._lock:
                self._opening -= 1
                self._pool[key] = connection
                self._last_used[key] = time.monotonic()
                self._users[connection] = 1
                self.connections_opened += 1
                self._start_sweeper()
            return connection, False

    def _pooled(self, key: tuple) -> C | None:
        """The live pooled connection for `key`, now counted as in use. Holding the lock."""
        connection = self._pool.get(key)
        if connection is None or not connection.is_active():
            return None
        self._users[connection] = self._users.get(connection, 0) + 1
        return connection

    def _make_room(self, key: tuple, deadline: float, login: Login) -> list[C]:
        """Take a place for a new connection for `key`, holding the lock (waiting frees it).

        Returns the connections whose places were taken, for the caller to close before it
        connects, so that the open sockets never outnumber max_open even for a moment.
        """
        dead = self._pool.pop(key, None)
        if dead is not None:  # found closed by the server: the new one takes its place
            del self._last_used[key]
            self._opening += 1
            return [dead]
        while len(self._pool) + self._opening + self._closing >= self.max_open:
            unused = next((k for k, c in self._pool.items() if c not in self._users), None)
            if unused is not None:
                logger.debug("SSH pool full: closing the least recently used connection")
                del self._last_used[unused]
                self._opening += 1
                return [self._pool.pop(unused)]
            left = deadline - time.monotonic()
            if left <= 0:
                logger.warning(
                    "SSH pool full: all %s connections busy for %g s; %s@%s:%s not served",
                    self.max_open,
                    login.connect_timeout,
                    login.username,
                    login.host,
                    login.port,
                )
                raise errors.portal_busy(self.max_open, login.connect_timeout)
            self._freed.wait(left)
        self._opening += 1
        return []

    def _release(self, key: tuple, connection: C) -> None:
        with self._lock:
            users = self._users.pop(connection) - 1
            if users:
                self._users[connection] = users
            elif self._pool.get(key) is connection:
                self._pool[key] = self._pool.pop(key)  # now the most recently used
                self._last_used[key] = time.monotonic()
                self._freed.notify_all()

    def _discard(self, key: tuple, connection: C) -> None:
        with self._lock:
            mine = self._pool.get(key) is connection
            if mine:
                del self._pool[key], self._last_used[key]
                self._closing += 1
        if mine:
            self._close([connection])
        else:
            connection.close()  # already replaced or closed: its place is not ours to free

    def _close(self, connections: list[C]) -> None:
        """Close connections already taken out of the pool and counted in `_closing`."""
        for connection in connections:
            try:
                connection.close()
            finally:
                with self._lock:
                    self._closing -= 1
                    self._freed.notify_all()

    # -- closing idle connections -----------------------------------------------------------

    # A daemon thread, not a check on each use: a worker whose users went quiet makes no call
    # that could close its connections, and it is the quiet hours that should hold none. The
    # thread sleeps until the next connection could be idle long enough, runs only while the pool
    # holds a connection, and is started again by the next connect (also after a fork, which
    # leaves the child without it).

    def _start_sweeper(self) -> None:
        if self._sweeper is None or not self._sweeper.is_alive():
            self._sweeper = threading.Thread(
                target=self._sweep_idle, name="ssh-pool-sweeper", daemon=True
            )
            self._sweeper.start()

    def _sweep_idle(self) -> None:
        while True:
            with self._lock:
                if not self._pool and not self._opening:
                    self._sweeper = None
                    return
                idle = self._take_idle(time.monotonic())
                if not idle:
                    self._emptied.wait(self._next_sweep_in(time.monotonic()))
                    continue
            logger.info("Closing %s SSH connection(s) idle for %g s", len(idle), self.idle_seconds)
            self._close(idle)

    def _take_idle(self, now: float) -> list[C]:
        """Take out of the pool the unused connections idle too long or found dead. Locked."""
        limit = self.idle_seconds
        idle = [
            key
            for key, connection in self._pool.items()
            if connection not in self._users
            and (now - self._last_used[key] >= limit or not connection.is_active())
        ]
        for key in idle:
            del self._last_used[key]
        self._closing += len(idle)
        return [self._pool.pop(key) for key in idle]

    def _next_sweep_in(self, now: float) -> float:
        # A connection in use now is idle at the earliest idle_seconds from now.
        limit = self.idle_seconds
        soonest = min(
            (
                self._last_used[key] + limit
                for key, connection in self._pool.items()
                if connection not in self._users
            ),
            default=now + limit,
        )
        return max(0.05, soonest - now)

    # -- the operation and its one retry ----------------------------------------------------

    def _with_connection[T](self, login: Login, operation: Callable[[C], T]) -> T:
        key = self._pool_key(login)
        connection, pooled = self._acquire(key, login)
        try:
            return operation(connection)
        except Stale as exc:
            if exc.dead:
                self._discard(key, connection)
            if not pooled:
                raise errors.disconnected(str(exc)) from exc
            logger.info(
                "Pooled connection to %s:%s failed (%s); retrying", login.host, login.port, exc
            )
        finally:
            # Given back before the retry, which may need its place in a full pool.
            self._release(key, connection)
        connection, _ = self._acquire(key, login)
        try:
            return operation(connection)
        except Stale as exc:
            if exc.dead:
                self._discard(key, connection)
            raise errors.disconnected(str(exc)) from exc
        finally:
            self._release(key, connection)

    def connect(self, login: Login) -> None:
        """Open the pooled connection for `login` now unless it is open: a worker may warm up."""
        key = self._pool_key(login)
        self._release(key, self._acquire(key, login)[0])

    def close_all(self) -> None:
        with self._lock:
            connections = list(self._pool.values())
            self._pool.clear()
            self._last_used.clear()
            self._closing += len(connections)
            self._emptied.notify_all()
        self._close(connections)
