"""The cluster gateway against a real OpenSSH server on 127.0.0.1 (tests/sshd.py); no mocks."""

import logging
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.cluster.errors import ClusterError
from jobs.cluster.gateway import Gateway, fetch_host_key, gateway
from jobs.cluster.keys import generate_keypair
from tests.sshd import Sshd, free_port, running_sshd_fixture, sshd_fixture  # noqa: F401

REPO = Path(__file__).resolve().parent.parent
HOSTILE = [
    "it's",
    '"double"',
    "$(touch /tmp/portal-pwned)",
    "`id`",
    "a; rm -rf /tmp/portal-nothing",
    "first\nsecond\n",
    "back\\slash",
    "*",
    "  spaces  ",
    "",
    "$HOME ${PATH}",
    "-n",
    "tab\there",
    "ünïcödé ✓",
    "&& | > < ! # ~",
]


@pytest.fixture
def gw() -> Iterator[Gateway]:
    # A gateway of its own per test, so that connection counts start at zero.
    fresh = Gateway()
    yield fresh
    fresh.close_all()


@pytest.fixture
def files(running_sshd: Sshd) -> Path:
    folder = running_sshd.folder / "files" / uuid.uuid4().hex
    folder.mkdir(parents=True)
    return folder


def _only_connection(gw: Gateway):
    (connection,) = gw._pool.values()
    return connection


def test_it_returns_hostile_arguments_byte_for_byte(gw: Gateway, running_sshd: Sshd) -> None:
    result = gw.run(running_sshd.login(), ["printf", "%s\\0", *HOSTILE])
    assert result.exit_status == 0, result.stderr
    assert result.stdout.split("\0")[:-1] == HOSTILE
    assert not Path("/tmp/portal-pwned").exists()


def test_it_echoes_a_hostile_argument(gw: Gateway, running_sshd: Sshd) -> None:
    text = 'it\'s $(id) `id`; echo injected & "quoted"'
    assert gw.run(running_sshd.login(), ["echo", text]).stdout == text + "\n"


def test_a_script_gets_hostile_arguments_as_data(gw: Gateway, running_sshd: Sshd) -> None:
    script = 'printf "%s\\0" "$@"; cat; exit 4'
    result = gw.run_script(running_sshd.login(), script, HOSTILE, program="printf", stdin="in\n")
    assert result.exit_status == 4, result.stderr
    assert result.stdout.split("\0") == [*HOSTILE, "in\n"]
    assert not Path("/tmp/portal-pwned").exists()


def test_a_command_that_ignores_its_stdin_still_exits_with_its_status(
    gw: Gateway, running_sshd: Sshd
) -> None:
    result = gw.run(running_sshd.login(), ["sh", "-c", "exit 7"], stdin="unread\n" * 1000)
    assert result.exit_status == 7


def test_it_returns_a_non_zero_exit_instead_of_raising(gw: Gateway, running_sshd: Sshd) -> None:
    command = "echo out; echo 'sbatch: error' >&2; exit 3"
    result = gw.run(running_sshd.login(), ["sh", "-c", command])
    assert (result.exit_status, result.stdout, result.stderr) == (3, "out\n", "sbatch: error\n")


def test_it_passes_stdin(gw: Gateway, running_sshd: Sshd) -> None:
    script = "#!/bin/bash\n#SBATCH --job-name='x y'\necho \"$(hostname)\"\n"
    assert gw.run(running_sshd.login(), ["cat"], stdin=script).stdout == script


def test_it_closes_stdin_when_there_is_none(gw: Gateway, running_sshd: Sshd) -> None:
    assert gw.run(running_sshd.login(), ["cat"], timeout=5).stdout == ""


def test_it_reads_large_output_on_both_streams(gw: Gateway, running_sshd: Sshd) -> None:
    # More than paramiko's 2 MB window on each stream: a reader that drained only one would hang.
    command = "head -c 3000000 /dev/zero | tr '\\0' a; head -c 3000000 /dev/zero | tr '\\0' b >&2"
    result = gw.run(running_sshd.login(), ["sh", "-c", command], stdin="x" * 200_000)
    assert (len(result.stdout), len(result.stderr)) == (3_000_000, 3_000_000)
    assert set(result.stdout) == {"a"} and set(result.stderr) == {"b"}


def test_it_rejects_arguments_no_command_line_can_carry(gw: Gateway, running_sshd: Sshd) -> None:
    with pytest.raises(ValueError, match="NUL"):
        gw.run(running_sshd.login(), ["echo", "a\0b"])
    with pytest.raises(ValueError, match="empty"):
        gw.run(running_sshd.login(), [])


def test_it_sets_tcp_nodelay_on_the_pooled_socket(gw: Gateway, running_sshd: Sshd) -> None:
    gw.run(running_sshd.login(), ["true"])
    sock = _only_connection(gw).sock
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1


def test_it_reuses_the_connection(gw: Gateway, running_sshd: Sshd) -> None:
    gw.run(running_sshd.login(), ["true"])
    transport = _only_connection(gw).transport
    gw.run(running_sshd.login(), ["true"])
    gw.write_file(running_sshd.login(), str(running_sshd.folder / "reuse.txt"), b"x")
    assert _only_connection(gw).transport is transport
    assert gw.connections_opened == 1


def test_threads_share_one_connection(gw: Gateway, running_sshd: Sshd) -> None:
    results: list[str] = []

    def work(n: int) -> None:
        results.append(gw.run(running_sshd.login(), ["echo", str(n)]).stdout)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [f"{n}\n" for n in range(8)]
    assert gw.connections_opened == 1


def test_another_key_gets_a_connection_of_its_own(gw: Gateway, running_sshd: Sshd) -> None:
    gw.run(running_sshd.login(), ["true"])
    with pytest.raises(ClusterError) as caught:
        gw.run(running_sshd.login(private_key=generate_keypair().private_pem), ["true"])
    assert caught.value.kind == "auth_failed"


def test_it_reconnects_when_the_server_restarted(gw: Gateway, running_sshd: Sshd) -> None:
    gw.run(running_sshd.login(), ["true"])
    for _ in range(3):
        running_sshd.restart()  # kills the pooled connection's server side too
        assert gw.run(running_sshd.login(), ["echo", "back"]).stdout == "back\n"
    assert gw.connections_opened == 4


def test_it_replaces_a_pooled_connection_that_hangs(gw: Gateway, running_sshd: Sshd) -> None:
    login = running_sshd.login(connect_timeout=0.5)
    gw.run(login, ["true"])
    running_sshd.signal_sessions(signal.SIGSTOP)  # the connection looks open but never answers
    try:
        started = time.monotonic()
        assert gw.run(login, ["echo", "fresh"]).stdout == "fresh\n"
        assert time.monotonic() - started < 2
        assert gw.connections_opened == 2
    finally:
        running_sshd.signal_sessions(signal.SIGKILL)


def test_sftp_reconnects_when_the_server_restarted(
    gw: Gateway, running_sshd: Sshd, files: Path
) -> None:
    (files / "log").write_bytes(b"hello\n")
    assert gw.read_tail(running_sshd.login(), str(files / "log"), 100) == b"hello\n"
    running_sshd.restart()
    assert gw.read_tail(running_sshd.login(), str(files / "log"), 100) == b"hello\n"
    assert gw.connections_opened == 2


def test_it_says_unreachable_quickly_when_sshd_is_down(gw: Gateway, running_sshd: Sshd) -> None:
    gw.run(running_sshd.login(), ["true"])
    running_sshd.stop()
    started = time.monotonic()
    with pytest.raises(ClusterError) as caught:
        gw.run(running_sshd.login(), ["true"])
    assert time.monotonic() - started < 1
    assert (caught.value.kind, caught.value.retryable) == ("unreachable", True)
    assert f"127.0.0.1:{running_sshd.port}" in caught.value.message
    running_sshd.start()
    assert gw.run(running_sshd.login(), ["true"]).exit_status == 0


def test_it_times_out_a_server_that_never_answers(gw: Gateway, running_sshd: Sshd) -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never says a word
        port = silent.getsockname()[1]
        started = time.monotonic()
        with pytest.raises(ClusterError) as caught:
            gw.run(running_sshd.login(port=port, connect_timeout=0.5), ["true"])
    assert 0.4 < time.monotonic() - started < 2
    assert (caught.value.kind, caught.value.retryable) == ("timeout", True)


def test_it_refuses_a_changed_host_key(gw: Gateway, running_sshd: Sshd) -> None:
    other = generate_keypair().public_line
    with pytest.raises(ClusterError) as caught:
        gw.run(running_sshd.login(host_key=other), ["true"])
    assert (caught.value.kind, caught.value.retryable) == ("host_key_mismatch", False)
    assert "host key has changed" in caught.value.message
    assert "admin" in caught.value.message


def test_it_refuses_a_host_key_of_a_type_the_server_does_not_have(
    gw: Gateway, running_sshd: Sshd, tmp_path: Path
) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ecdsa", "-N", "", "-f", tmp_path / "k"],
        check=True,
        capture_output=True,
    )
    ecdsa = (tmp_path / "k.pub").read_text()
    with pytest.raises(ClusterError) as caught:
        gw.run(running_sshd.login(host_key=ecdsa), ["true"])
    assert caught.value.kind == "host_key_mismatch"


def test_it_rejects_a_malformed_pinned_key(gw: Gateway, running_sshd: Sshd) -> None:
    with pytest.raises(ClusterError) as caught:
        gw.run(running_sshd.login(host_key="ssh-ed25519 not-base64!"), ["true"])
    assert (caught.value.kind, caught.value.retryable) == ("config", False)


def test_it_reports_a_key_missing_from_authorized_keys(gw: Gateway, running_sshd: Sshd) -> None:
    stranger = generate_keypair().private_pem
    with pytest.raises(ClusterError) as caught:
        gw.run(running_sshd.login(private_key=stranger), ["true"])
    assert (caught.value.kind, caught.value.retryable) == ("auth_failed", False)
    assert "authorized_keys" in caught.value.message
    assert running_sshd.user in caught.value.message


def test_it_times_out_a_hanging_command_and_keeps_the_connection(
    gw: Gateway, running_sshd: Sshd
) -> None:
    started = time.monotonic()
    with pytest.raises(ClusterError) as caught:
        gw.run(running_sshd.login(), ["sleep", "30"], timeout=0.5)
    assert 0.4 < time.monotonic() - started < 2
    assert (caught.value.kind, caught.value.retryable) == ("timeout", True)
    assert gw.run(running_sshd.login(), ["echo", "still here"]).stdout == "still here\n"
    assert gw.connections_opened == 1


def test_the_command_timeout_comes_from_the_login(gw: Gateway, running_sshd: Sshd) -> None:
    with pytest.raises(ClusterError) as caught:
        gw.run(running_sshd.login(command_timeout=0.3), ["sleep", "30"])
    assert caught.value.kind == "timeout"


def test_it_writes_a_file_with_its_mode(gw: Gateway, running_sshd: Sshd, files: Path) -> None:
    data = bytes(range(256)) * 40
    gw.write_file(running_sshd.login(), str(files / "job.sbatch"), data, mode=0o600)
    assert (files / "job.sbatch").read_bytes() == data
    assert (files / "job.sbatch").stat().st_mode & 0o777 == 0o600
    gw.write_file(running_sshd.login(), str(files / "job.sbatch"), b"shorter")
    assert (files / "job.sbatch").read_bytes() == b"shorter"
    assert (files / "job.sbatch").stat().st_mode & 0o777 == 0o644
    assert [p.name for p in files.iterdir()] == ["job.sbatch"]  # no temporary left behind


def test_writing_into_a_missing_directory_is_a_file_error(
    gw: Gateway, running_sshd: Sshd, files: Path
) -> None:
    with pytest.raises(ClusterError) as caught:
        gw.write_file(running_sshd.login(), str(files / "nowhere" / "x"), b"x")
    assert (caught.value.kind, caught.value.retryable) == ("remote_file", False)
    assert str(files / "nowhere" / "x") in caught.value.message


def test_mkdirs_makes_parents_and_accepts_existing(
    gw: Gateway, running_sshd: Sshd, files: Path
) -> None:
    target = files / "portal-jobs" / "resnet" / "run-1"
    gw.mkdirs(running_sshd.login(), str(target))
    gw.mkdirs(running_sshd.login(), str(target) + "/")
    assert target.is_dir()
    (files / "plain").write_text("")
    with pytest.raises(ClusterError) as caught:
        gw.mkdirs(running_sshd.login(), str(files / "plain" / "sub"))
    assert caught.value.kind == "remote_file"
    assert "not a directory" in caught.value.message


def test_mkdirs_reports_what_the_server_refused(
    gw: Gateway, running_sshd: Sshd, files: Path
) -> None:
    with pytest.raises(ClusterError) as caught:
        gw.mkdirs(running_sshd.login(), "/proc/portal-test/sub")
    assert (caught.value.kind, caught.value.retryable) == ("remote_file", False)
    assert "/proc/portal-test/sub" in caught.value.message


def test_relative_paths_are_in_the_home_directory(gw: Gateway, running_sshd: Sshd) -> None:
    home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    name = f".portal-gateway-test-{uuid.uuid4().hex}"
    try:
        gw.mkdirs(running_sshd.login(), f"{name}/a/b")
        gw.write_file(running_sshd.login(), f"~/{name}/a/b/f.txt", b"home")
        assert (home / name / "a" / "b" / "f.txt").read_bytes() == b"home"
        assert gw.read_tail(running_sshd.login(), f"{name}/a/b/f.txt", 10) == b"home"
    finally:
        shutil.rmtree(home / name, ignore_errors=True)


def test_read_tail(gw: Gateway, running_sshd: Sshd, files: Path) -> None:
    login = running_sshd.login()
    data = b"".join(b"line %d\n" % n for n in range(1000))
    (files / "out").write_bytes(data)
    (files / "empty").write_bytes(b"")
    assert gw.read_tail(login, str(files / "out"), 100) == data[-100:]
    assert gw.read_tail(login, str(files / "out"), 10**6) == data
    assert gw.read_tail(login, str(files / "out"), 0) == b""
    assert gw.read_tail(login, str(files / "empty"), 100) == b""
    assert gw.read_tail(login, str(files / "missing"), 100) == b""


def test_read_from_follows_a_growing_file(gw: Gateway, running_sshd: Sshd, files: Path) -> None:
    login, log = running_sshd.login(), files / "slurm-1.out"
    assert gw.read_from(login, str(log), 0, 100) == (b"", 0)  # not there yet
    log.write_bytes(b"epoch 1\nepo")
    assert gw.read_from(login, str(log), 0, 100) == (b"epoch 1\nepo", 11)
    assert gw.read_from(login, str(log), 11, 100) == (b"", 11)
    with log.open("ab") as output:
        output.write(b"ch 2\nepoch 3\n")
    assert gw.read_from(login, str(log), 11, 4) == (b"ch 2", 15)
    assert gw.read_from(login, str(log), 15, 100) == (b"\nepoch 3\n", 24)


def test_read_from_starts_over_when_the_file_was_truncated(
    gw: Gateway, running_sshd: Sshd, files: Path
) -> None:
    log = files / "slurm-2.out"
    log.write_bytes(b"requeued\n")
    data, offset = gw.read_from(running_sshd.login(), str(log), 500, 100)
    assert (data, offset) == (b"requeued\n", 9)
    assert offset != 500 + len(data)  # how the caller notices


def test_fetch_host_key_matches_ssh_keygen(running_sshd: Sshd) -> None:
    printed = subprocess.run(
        ["ssh-keygen", "-lf", running_sshd.host_key_pub], capture_output=True, text=True, check=True
    ).stdout.split()
    key = fetch_host_key("127.0.0.1", running_sshd.port)
    assert key.fingerprint == printed[1]
    assert re.fullmatch(r"SHA256:[A-Za-z0-9+/]{43}", key.fingerprint)
    assert key.line == running_sshd.host_key_line


def test_fetch_host_key_of_a_closed_port_is_unreachable() -> None:
    with pytest.raises(ClusterError) as caught:
        fetch_host_key("127.0.0.1", free_port(), timeout=2)
    assert (caught.value.kind, caught.value.retryable) == ("unreachable", True)


def test_no_private_key_text_reaches_errors_or_logs(
    gw: Gateway, running_sshd: Sshd, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="paramiko")
    secrets = [running_sshd.client.private_pem, generate_keypair().private_pem]
    garbled = "-----BEGIN OPENSSH PRIVATE KEY-----\nc2VjcmV0LWtleS1ib2R5\n-----END"
    messages = []
    gw.run(running_sshd.login(), ["true"])
    gw.write_file(running_sshd.login(), str(running_sshd.folder / "s.txt"), b"x")
    for login in (
        running_sshd.login(private_key=secrets[1]),
        running_sshd.login(private_key=garbled),
        running_sshd.login(host_key=generate_keypair().public_line),
        running_sshd.login(port=free_port()),
    ):
        with pytest.raises(ClusterError) as caught:
            gw.run(login, ["true"])
        messages += [str(caught.value), repr(caught.value), caught.value.detail]
        assert "BEGIN OPENSSH" not in repr(login)
    logged = [record.getMessage() for record in caplog.records]
    assert any("Connected to" in text for text in logged)
    assert any(record.name.startswith("paramiko") for record in caplog.records)
    bodies = [line for pem in [*secrets, garbled] for line in pem.splitlines()[1:-1]]
    for text in messages + logged:
        assert "PRIVATE KEY" not in text
        assert not any(body in text for body in bodies)


def test_the_worker_has_one_gateway() -> None:
    assert isinstance(gateway, Gateway)


def test_only_the_gateway_imports_paramiko() -> None:
    importers = [
        str(path.relative_to(REPO))
        for path in REPO.rglob("*.py")
        if not {".venv", "node_modules"} & set(path.relative_to(REPO).parts)
        and re.search(r"^\s*(import|from)\s+paramiko\b", path.read_text(), re.MULTILINE)
    ]
    assert importers == ["jobs/cluster/gateway.py"]
