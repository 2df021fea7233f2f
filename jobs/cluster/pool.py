"""The gateway's pool: one open connection per cluster account and key, and its one retry.

`ConnectionPool` is a part of `Gateway` (jobs/cluster/gateway.py), kept here because none of it
needs paramiko: the gateway supplies `_connect`, which opens and authenticates a connection, and
raises `Stale` when a connection fails an operation that may safely be redone.
"""

import hashlib
import logging
import threading
from collections.abc import Callable
from typing import Protocol

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
    def __init__(self) -> None:
        self.connections_opened = 0
        self._lock = threading.Lock()
        self._pool: dict[tuple, C] = {}
        self._connecting: dict[tuple, threading.Lock] = {}

    def _connect(self, login: Login) -> C:
        raise NotImplementedError  # the gateway's

    @staticmethod
    def _pool_key(login: Login) -> tuple:
        # The key digest is part of the identity: a connection authenticated with one key is
        # never handed to a caller presenting another.
        digest = hashlib.sha256(login.private_key.encode()).hexdigest()
        return (login.host, login.port, login.username, login.host_key, digest)

    def _acquire(self, login: Login) -> tuple[C, bool]:
        """Return a live connection for `login` and whether it came from the pool."""
        key = self._pool_key(login)
        with self._lock:
            connection = self._pool.get(key)
            if connection is not None and connection.is_active():
                return connection, True
            connecting = self._connecting.setdefault(key, threading.Lock())
        # One thread connects per account; the others wait for it and share the result.
        with connecting:
            with self._lock:
                connection = self._pool.get(key)
                if connection is not None and connection.is_active():
                    return connection, True
                stale = self._pool.pop(key, None)
            if stale is not None:
                stale.close()
            connection = self._connect(login)
            with self._lock:
                self._pool[key] = connection
                self.connections_opened += 1
            return connection, False

    def _discard(self, login: Login, connection: C) -> None:
        with self._lock:
            if self._pool.get(self._pool_key(login)) is connection:
                del self._pool[self._pool_key(login)]
        connection.close()

    def _with_connection[T](self, login: Login, operation: Callable[[C], T]) -> T:
        connection, pooled = self._acquire(login)
        try:
            return operation(connection)
        except Stale as exc:
            if exc.dead:
                self._discard(login, connection)
            if not pooled:
                raise errors.disconnected(str(exc)) from exc
            logger.info(
                "Pooled connection to %s:%s failed (%s); retrying", login.host, login.port, exc
            )
        connection, _ = self._acquire(login)
        try:
            return operation(connection)
        except Stale as exc:
            if exc.dead:
                self._discard(login, connection)
            raise errors.disconnected(str(exc)) from exc

    def connect(self, login: Login) -> None:
        """Open the pooled connection for `login` now unless it is open: a worker may warm up."""
        self._acquire(login)

    def close_all(self) -> None:
        with self._lock:
            connections = list(self._pool.values())
            self._pool.clear()
        for connection in connections:
            connection.close()
