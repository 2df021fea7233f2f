"""The gateway's connection pool (jobs/cluster/pool.py) with a fake connection in place of SSH.

The pool needs no paramiko; tests/test_pool_cluster.py runs the same bounds against the real sshd.
"""

import random
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from django.test import override_settings

from jobs.cluster.errors import ClusterError
from jobs.cluster.login import Login
from jobs.cluster.pool import ConnectionPool, Stale


class FakeConnection:
    """Counts the connections open at once across all of a pool's, as sockets would."""

    def __init__(self, pool: "FakePool", login: Login) -> None:
        self.pool = pool
        self.login = login
        self.closed = False
        with pool.count_lock:
            pool.live += 1
            pool.most_live = max(pool.most_live, pool.live)

    def is_active(self) -> bool:
        return not self.closed

    def close(self) -> None:
        with self.pool.count_lock:
            if not self.closed:
                self.closed = True
                self.pool.live -= 1


class FakePool(ConnectionPool[FakeConnection]):
    def __init__(self, **limits) -> None:
        super().__init__(**limits)
        self.count_lock = threading.Lock()
        self.live = 0
        self.most_live = 0
        self.made: list[FakeConnection] = []

    def _connect(self, login: Login) -> FakeConnection:
        time.sleep(0.001)  # a connect takes a while: room for threads to race
        connection = FakeConnection(self, login)
        self.made.append(connection)
        return connection

    def run(self, login: Login, operation: Callable[[FakeConnection], str] | None = None) -> str:
        return self._with_connection(login, operation or (lambda c: c.login.username))

    def made_for(self, login: Login) -> list[FakeConnection]:
        return [c for c in self.made if c.login == login]


@pytest.fixture
def pools() -> Iterator[Callable[..., FakePool]]:
    """Pools built with the given limits, closed after the test (which ends their sweepers)."""
    made: list[FakePool] = []

    def make(**limits) -> FakePool:
        made.append(FakePool(**limits))
        return made[-1]

    yield make
    for pool in made:
        pool.close_all()


def login(n: int, connect_timeout: float = 5.0) -> Login:
    return Login(
        host="cluster.example",
        port=22,
        username=f"user{n}",
        private_key=f"key of user{n}",
        host_key="ssh-ed25519 AAAA",
        connect_timeout=connect_timeout,
    )


def hold(pool: FakePool, who: Login) -> tuple[threading.Event, threading.Thread]:
    """Keep `who`'s connection in use on another thread until the returned event is set."""
    inside, done = threading.Event(), threading.Event()

    def operation(connection: FakeConnection) -> str:
        inside.set()
        done.wait(10)
        return "held"

    thread = threading.Thread(target=pool.run, args=(who, operation))
    thread.start()
    assert inside.wait(5)
    return done, thread


def test_it_never_holds_more_than_its_maximum_under_many_threads(
    pools: Callable[..., FakePool],
) -> None:
    pool = pools(max_open=4, idle_seconds=60)
    logins = [login(n) for n in range(40)]
    answers: list[tuple[Login, str]] = []
    failures: list[BaseException] = []

    def answer_slowly(connection: FakeConnection) -> str:
        time.sleep(0.0005)
        return connection.login.username

    def work(seed: int) -> None:
        chooser = random.Random(seed)
        for _ in range(60):
            who = chooser.choice(logins)
            try:
                answers.append((who, pool.run(who, answer_slowly)))
            except BaseException as exc:
                failures.append(exc)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    assert len(answers) == 16 * 60
    assert all(answer == who.username for who, answer in answers)  # each got its own login's
    assert pool.most_live <= 4
    assert pool.open_count() == pool.live <= 4
    assert pool.connections_opened > 40  # logins took turns: the pool did evict


def test_a_full_pool_closes_the_least_recently_used_connection_not_in_use(
    pools: Callable[..., FakePool],
) -> None:
    pool = pools(max_open=2, idle_seconds=60)
    first, second, third = login(1), login(2), login(3)
    release, holder = hold(pool, first)  # the least recently used, but in use
    pool.run(second)

    assert pool.run(third) == "user3"

    (busy,), (unused,) = pool.made_for(first), pool.made_for(second)
    assert unused.closed and not busy.closed
    release.set()
    holder.join()
    assert pool.run(first) == "user1"
    assert pool.made_for(first) == [busy]  # kept, not reopened
    assert pool.most_live == 2


def test_a_full_busy_pool_says_the_portal_is_busy_after_the_connect_timeout(
    pools: Callable[..., FakePool],
) -> None:
    pool = pools(max_open=1, idle_seconds=60)
    release, holder = hold(pool, login(1))
    started = time.monotonic()
    try:
        with pytest.raises(ClusterError) as caught:
            pool.run(login(2, connect_timeout=0.3))
    finally:
        release.set()
        holder.join()
    assert 0.3 <= time.monotonic() - started < 2
    assert (caught.value.kind, caught.value.retryable) == ("busy", True)
    assert "The portal is busy" in caught.value.message
    assert pool.made_for(login(2)) == []
    assert pool.run(login(2)) == "user2"  # once given back, the place is free again


def test_a_waiting_login_gets_the_place_given_back(pools: Callable[..., FakePool]) -> None:
    pool = pools(max_open=1, idle_seconds=60)
    release, holder = hold(pool, login(1))
    threading.Timer(0.2, release.set).start()
    started = time.monotonic()
    assert pool.run(login(2, connect_timeout=5)) == "user2"
    assert 0.15 < time.monotonic() - started < 2
    holder.join()
    assert pool.made_for(login(1))[0].closed
    assert pool.most_live == 1


def test_an_idle_connection_is_closed_and_reopened_on_next_use(
    pools: Callable[..., FakePool],
) -> None:
    pool = pools(max_open=4, idle_seconds=0.2)
    pool.run(login(1))
    (first,) = pool.made_for(login(1))

    deadline = time.monotonic() + 3
    while not first.closed and time.monotonic() < deadline:
        time.sleep(0.02)
    assert first.closed
    assert pool.open_count() == 0

    assert pool.run(login(1)) == "user1"
    assert pool.connections_opened == 2
    assert pool.open_count() == 1


def test_a_connection_in_use_is_not_closed_as_idle(pools: Callable[..., FakePool]) -> None:
    pool = pools(max_open=4, idle_seconds=0.1)
    release, holder = hold(pool, login(1))
    time.sleep(0.4)
    (connection,) = pool.made_for(login(1))
    assert not connection.closed
    release.set()
    holder.join()


def test_a_stale_pooled_connection_is_retried_once_on_a_fresh_one(
    pools: Callable[..., FakePool],
) -> None:
    pool = pools(max_open=1, idle_seconds=60)
    pool.run(login(1))
    tries: list[FakeConnection] = []

    def fails_first(connection: FakeConnection) -> str:
        tries.append(connection)
        if len(tries) == 1:
            raise Stale("connection reset", dead=True)
        return "done"

    assert pool.run(login(1), fails_first) == "done"  # within a pool of one: the place came back
    old, fresh = tries
    assert old.closed and not fresh.closed
    assert pool.connections_opened == 2
    assert pool.open_count() == 1


def test_a_retry_after_a_failed_session_gives_the_connection_back(
    pools: Callable[..., FakePool],
) -> None:
    pool = pools(max_open=1, idle_seconds=60)
    tries: list[FakeConnection] = []

    def session_fails_first(connection: FakeConnection) -> str:
        tries.append(connection)
        if len(tries) == 1:
            raise Stale("SFTP session closed", dead=False)
        return "done"

    pool.run(login(1))
    assert pool.run(login(1), session_fails_first) == "done"
    assert tries[0] is tries[1]  # the connection itself was still good
    # Not counted in use any more: another login takes its place at once.
    assert pool.run(login(2, connect_timeout=0.1)) == "user2"


def test_a_fresh_connection_that_fails_is_not_retried(pools: Callable[..., FakePool]) -> None:
    pool = pools(max_open=1, idle_seconds=60)

    def fails(connection: FakeConnection) -> str:
        raise Stale("connection reset", dead=True)

    with pytest.raises(ClusterError) as caught:
        pool.run(login(1), fails)
    assert (caught.value.kind, caught.value.retryable) == ("disconnected", True)
    assert pool.open_count() == 0
    assert pool.run(login(2, connect_timeout=0.1)) == "user2"


def test_close_all_closes_every_connection(pools: Callable[..., FakePool]) -> None:
    pool = pools(max_open=4, idle_seconds=60)
    for n in range(3):
        pool.connect(login(n))
    pool.close_all()
    assert pool.live == 0
    assert pool.open_count() == 0


def test_the_limits_come_from_the_settings(pools: Callable[..., FakePool]) -> None:
    pool = pools()
    with override_settings(SSH_POOL_SIZE=2, SSH_IDLE_SECONDS=7):
        assert (pool.max_open, pool.idle_seconds) == (2, 7)
        for n in range(5):
            pool.run(login(n))
        assert pool.most_live == 2
