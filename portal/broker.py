"""The embedded broker: kombu's SQLAlchemy transport on a SQLite file of the portal's own, so that
`make run` needs no server. Each message is a row written in a transaction, so a reader never sees
half of one (the filesystem transport could, and its worker died of it)."""

import sqlite3
from contextlib import closing
from functools import partial

from sqlalchemy.pool import NullPool

PREFIX = "sqla+sqlite:///"
# The worker takes each message inside BEGIN IMMEDIATE; a publisher that finds the file locked
# waits for it this long rather than failing the publish.
BUSY_TIMEOUT_SECONDS = 60


def sqlite_path(broker_url: str) -> str | None:
    """The SQLite file of an embedded broker's URL; None for any other broker."""
    # SQLAlchemy's spelling: three slashes before a relative path, four before an absolute one.
    return broker_url.removeprefix(PREFIX) if broker_url.startswith(PREFIX) else None


def transport_options(path: str) -> dict:
    """kombu passes these on to SQLAlchemy's create_engine."""
    return {
        "creator": partial(connect, path),
        # A new connection for each transaction: a pooled one would be inherited by the worker's
        # forked pool processes, and SQLite connections must not cross a fork.
        "poolclass": NullPool,
    }


def connect(path: str) -> sqlite3.Connection:
    # Left in the sqlite3 module's default transaction mode: kombu issues its own BEGIN IMMEDIATE.
    connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False)
    # WAL (kept in the file once set) lets publishers and the worker read while one writes.
    connection.execute("PRAGMA journal_mode=WAL")
    return connection


def prune(path: str) -> int:
    """Deletes the messages already handed to a worker, and says how many.

    The transport only marks a delivered message invisible and never deletes it, so without this
    the file would grow with every task. An invisible message is never delivered again."""
    with closing(connect(path)) as connection, connection:
        return connection.execute("DELETE FROM kombu_message WHERE visible = 0").rowcount
