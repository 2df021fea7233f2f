# The embedded broker (portal/broker.py) through kombu, in this process: no worker needed.

from pathlib import Path

from kombu import Connection

from portal import broker


def test_it_reads_the_file_from_the_url() -> None:
    assert broker.sqlite_path("sqla+sqlite:////var/portal/broker.sqlite3") == (
        "/var/portal/broker.sqlite3"
    )
    assert broker.sqlite_path("sqla+sqlite:///broker.sqlite3") == "broker.sqlite3"
    assert broker.sqlite_path("redis://127.0.0.1:6379/0") is None


def test_it_prunes_only_delivered_messages(tmp_path: Path) -> None:
    path = str(tmp_path / "broker.sqlite3")
    url = broker.PREFIX + path
    with Connection(url, transport_options=broker.transport_options(path)) as connection:
        queue = connection.SimpleQueue("soak")
        queue.put({"n": 1})
        queue.put({"n": 2})
        first = queue.get(timeout=5)
        first.ack()
        assert broker.prune(path) == 1
        second = queue.get(timeout=5)
        assert second.payload == {"n": 2}
        second.ack()
        queue.close()
    assert broker.prune(path) == 1
