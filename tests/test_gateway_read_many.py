"""The gateway's reads of many files at once (GPU sample files), against a real OpenSSH server."""

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.cluster.gateway import Gateway
from jobs.cluster.login import Login
from tests.sshd import Sshd, running_sshd_fixture, sshd_fixture  # noqa: F401


@pytest.fixture
def gw() -> Iterator[Gateway]:
    fresh = Gateway()
    yield fresh
    fresh.close_all()


@pytest.fixture
def files(running_sshd: Sshd) -> Path:
    folder = running_sshd.folder / "files" / uuid.uuid4().hex
    folder.mkdir(parents=True)
    return folder


def test_read_many_reads_each_file_from_its_offset(
    gw: Gateway, running_sshd: Sshd, files: Path
) -> None:
    login = running_sshd.login()
    (files / "a").write_bytes(b"epoch 1\nepoch 2\n")
    (files / "b").write_bytes(b"0123456789")
    (files / "empty").write_bytes(b"")
    wanted = [
        (str(files / "a"), 8),
        (str(files / "b"), 0),  # capped at 4
        (str(files / "missing"), 5),  # not there yet: nothing, the offset kept
        (str(files / "empty"), 0),
        (str(files / "b"), 10),  # nothing new
        (str(files / "a"), 500),  # shorter than the offset: replaced, read from the start
    ]
    assert gw.read_many(login, wanted, 4) == [
        (b"epoc", 12),
        (b"0123", 4),
        (b"", 5),
        (b"", 0),
        (b"", 10),
        (b"epoc", 4),
    ]
    assert gw.read_many(login, [], 4) == []
    assert gw.connections_opened == 1


def test_read_many_rejects_negative_offsets(gw: Gateway, running_sshd: Sshd) -> None:
    with pytest.raises(ValueError):
        gw.read_many(running_sshd.login(), [("x", -1)], 10)


def test_read_many_skips_a_file_it_may_not_read(gw: Gateway, devcluster) -> None:
    # As the dev cluster's user, not root (who reads any file): its own file, made unreadable.
    folder = f"portal-test-files/{uuid.uuid4().hex}"
    made = devcluster.ssh(
        f"mkdir -p {folder} && printf no > {folder}/secret && chmod 0 {folder}/secret"
        f" && printf yes > {folder}/open"
    )
    assert made.returncode == 0, made.stderr
    login = Login(
        host=devcluster.host,
        port=devcluster.port,
        username=devcluster.user,
        private_key=devcluster.key.read_text(),
        host_key=devcluster.host_key,
    )
    answers = gw.read_many(login, [(f"{folder}/{n}", 0) for n in ("secret", "open")], 9)
    assert answers == [(b"", 0), (b"yes", 3)]


def test_list_dir_gives_names_and_sizes(gw: Gateway, running_sshd: Sshd, files: Path) -> None:
    (files / "gpu-1_2.n1.jsonl").write_bytes(b"{}\n")
    (files / "slurm-1_2.out").write_bytes(b"")
    login = running_sshd.login()
    assert gw.list_dir(login, str(files)) == {"gpu-1_2.n1.jsonl": 3, "slurm-1_2.out": 0}
    assert gw.list_dir(login, str(files / "missing")) == {}
