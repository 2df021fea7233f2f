"""The bounded SSH pool against the dev cluster's real sshd: many portal users, each with a key of
its own, share a few connections, and an idle connection closes and comes back by itself.

Open connections are counted as the kernel sees them: this process's sockets (/proc/self/fd)
that /proc/net/tcp shows ESTABLISHED to the sshd's port.
"""

import io
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import call_command

from jobs.cluster import gateway as portal_gateway
from jobs.cluster.gateway import Gateway
from jobs.cluster.login import Login
from jobs.cluster.remote import login_for
from jobs.models import ClusterAccount

ESTABLISHED = "01"
USERS = [f"pool-user-{n}" for n in range(8)]


def established_to(port: int) -> int:
    """This process's TCP connections to `port` that are ESTABLISHED."""
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            mine.add(target[len("socket:[") : -1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            if remote_port == port and fields[3] == ESTABLISHED and fields[9] in mine:
                count += 1
    return count


@pytest.fixture
def logins(devcluster, seeded, django_user_model) -> list[Login]:
    for name in USERS:
        django_user_model.objects.create_user(name, password=f"{name}-password")
    call_command("register_devcluster", *USERS, stdout=io.StringIO())
    accounts = ClusterAccount.objects.filter(owner__username__in=USERS, cluster__slug="local")
    made = [login_for(account) for account in accounts]
    assert len({login.private_key for login in made}) == len(USERS)  # a key each
    # Registering used the process's own gateway: close its connections, so that every one
    # counted here is the test's.
    portal_gateway.gateway.close_all()
    return made


@pytest.fixture
def small_gateway() -> Iterator[Gateway]:
    gateway = Gateway(max_open=3, idle_seconds=1)
    yield gateway
    gateway.close_all()


def test_eight_logins_never_hold_more_than_three_connections(
    small_gateway: Gateway, logins: list[Login], devcluster
) -> None:
    assert established_to(devcluster.port) == 0
    counts: list[int] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            counts.append(established_to(devcluster.port))
            time.sleep(0.002)

    answers: dict[str, list[str]] = {login.private_key: [] for login in logins}
    failures: list[BaseException] = []

    def work(login: Login, n: int) -> None:
        for i in range(6):
            try:
                result = small_gateway.run(login, ["echo", f"{n}-{i}"])
                answers[login.private_key].append(result.stdout)
            except BaseException as exc:
                failures.append(exc)

    watcher = threading.Thread(target=watch)
    watcher.start()
    workers = [threading.Thread(target=work, args=(login, n)) for n, login in enumerate(logins)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    stop.set()
    watcher.join()

    assert failures == []
    for n, login in enumerate(logins):
        assert answers[login.private_key] == [f"{n}-{i}\n" for i in range(6)]
    assert max(counts) <= 3
    assert max(counts) >= 2  # the logins did run side by side
    assert small_gateway.connections_opened >= len(logins)  # each had a connection in turn
    assert established_to(devcluster.port) == small_gateway.open_count() <= 3


def test_an_idle_connection_closes_and_the_next_command_reopens_it(
    small_gateway: Gateway, logins: list[Login], devcluster
) -> None:
    login = logins[0]
    assert small_gateway.run(login, ["echo", "first"]).stdout == "first\n"
    assert established_to(devcluster.port) == 1

    deadline = time.monotonic() + 5
    while established_to(devcluster.port) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert established_to(devcluster.port) == 0  # closed after idling 1 s
    assert small_gateway.open_count() == 0

    assert small_gateway.run(login, ["echo", "again"]).stdout == "again\n"
    assert established_to(devcluster.port) == 1
    assert small_gateway.connections_opened == 2


def test_a_reopened_connection_answers_its_first_command_without_a_delayed_ack(
    small_gateway: Gateway, logins: list[Login]
) -> None:
    # Without TCP_QUICKACK the first channel on a new connection waits ~40 ms for a delayed ACK
    # (jobs/cluster/gateway.py: _QuickAckSocket), which every reopened idle connection would pay.
    login = logins[0]
    times = []
    for _ in range(7):
        small_gateway.close_all()
        small_gateway.connect(login)
        started = time.perf_counter()
        assert small_gateway.run(login, ["true"]).exit_status == 0
        times.append(time.perf_counter() - started)
    assert sorted(times)[3] < 0.035
