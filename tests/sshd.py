"""A real OpenSSH server on 127.0.0.1 for the gateway's tests and benchmark.

`Sshd.create(folder)` writes a config, host key, pid file and authorized_keys under `folder`, for
the current user on a free port; `start()` runs `/usr/sbin/sshd -D -e` with them. The `sshd`
fixture gives one per test session, installing openssh-server with apt when we are root and it is
missing; tests may `stop()` and `start()` it again (same port, same host key). Import
`sshd_fixture` and `running_sshd_fixture` into a test module to use them.
"""

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from jobs.cluster.keys import KeyPair, authorized_keys_line, generate_keypair
from jobs.cluster.login import Login
from tests.services import service_missing

SSHD = Path("/usr/sbin/sshd")
CONFIG = """\
ListenAddress 127.0.0.1
Port {port}
HostKey {folder}/ssh_host_ed25519_key
PidFile {folder}/sshd.pid
AuthorizedKeysFile {folder}/authorized_keys
AllowUsers {user}
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
StrictModes no
Subsystem sftp internal-sftp
# The benchmark opens connections back to back: do not throttle them.
MaxStartups 100
LogLevel VERBOSE
# Commands still start in the account's real home (so do SFTP's relative paths), but the shell
# reads the dotfiles of an empty folder: a developer's ~/.bashrc (pyenv init: 150 ms here) would
# otherwise dominate every timing.
SetEnv HOME={folder}/home
"""


def install_sshd() -> str | None:
    """Install openssh-server if needed and possible; return why not, or None when it is there."""
    if SSHD.exists():
        return None
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return f"{SSHD} is missing (apt-get install openssh-server, as root)"
    # Debian starts a package's service on install unless policy-rc.d forbids it: we only want
    # the binary, run below with a config of our own.
    policy = Path("/usr/sbin/policy-rc.d")
    added_policy = not policy.exists()
    if added_policy:
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
    try:
        env = os.environ | {"DEBIAN_FRONTEND": "noninteractive"}
        for command in (
            ["apt-get", "update", "-q"],
            ["apt-get", "install", "-y", "-q", "--no-install-recommends", "openssh-server"],
        ):
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                return f"{' '.join(command)} failed: {done.stderr.strip()[-500:]}"
    finally:
        if added_policy:
            policy.unlink()
    return None if SSHD.exists() else f"{SSHD} is still missing after installing openssh-server"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _children(pid: int) -> list[int]:
    # sshd forks one process per connection, each in a session of its own (setsid), so killing the
    # listener's process group would leave them: find them by parent instead.
    found = []
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = status.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            child = int(status.parent.name)
            found += [child, *_children(child)]
    return found


@dataclass
class Sshd:
    folder: Path
    port: int
    user: str
    client: KeyPair
    host_key_line: str
    process: subprocess.Popen | None = field(default=None, repr=False)

    @classmethod
    def create(cls, folder: Path, port: int | None = None) -> "Sshd":
        folder.mkdir(parents=True, exist_ok=True)
        host_key = folder / "ssh_host_ed25519_key"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test-host", "-f", host_key],
            check=True,
            capture_output=True,
        )
        public = host_key.with_suffix(".pub").read_text().split()
        client = generate_keypair()
        (folder / "authorized_keys").write_text(authorized_keys_line(client.public_line) + "\n")
        user = getpass.getuser()
        port = port or free_port()
        (folder / "home").mkdir(exist_ok=True)
        (folder / "sshd_config").write_text(CONFIG.format(port=port, folder=folder, user=user))
        return cls(folder, port, user, client, f"{public[0]} {public[1]}")

    @property
    def host_key_pub(self) -> Path:
        return self.folder / "ssh_host_ed25519_key.pub"

    def login(self, **overrides) -> Login:
        values = {
            "host": "127.0.0.1",
            "port": self.port,
            "username": self.user,
            "private_key": self.client.private_pem,
            "host_key": self.host_key_line,
        }
        return Login(**(values | overrides))

    def authorize(self, public_line: str) -> None:
        with (self.folder / "authorized_keys").open("a") as keys:
            keys.write(authorized_keys_line(public_line) + "\n")

    def start(self, timeout: float = 10) -> None:
        assert self.process is None, "already running"
        if os.geteuid() == 0:
            # Privilege separation needs this empty directory; the Debian service creates it.
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        log = (self.folder / "sshd.log").open("a")
        self.process = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", self.folder / "sshd_config"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.process = None
                raise RuntimeError(f"sshd exited at start:\n{self.log_tail()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"sshd did not listen on port {self.port}:\n{self.log_tail()}")

    def stop(self) -> None:
        """Stop the listener and every connection it serves, as a reboot of the cluster would."""
        if self.process is None:
            return
        self.signal_sessions(signal.SIGKILL)
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def signal_sessions(self, signum: int) -> None:
        """Send `signum` to the processes serving open connections (SIGSTOP: a hung server)."""
        assert self.process is not None, "not running"
        for child in _children(self.process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signum)

    def restart(self) -> None:
        self.stop()
        self.start()

    def log_tail(self, lines: int = 30) -> str:
        path = self.folder / "sshd.log"
        return "\n".join(path.read_text().splitlines()[-lines:]) if path.exists() else ""


@pytest.fixture(scope="session", name="sshd")
def sshd_fixture() -> Iterator[Sshd]:
    reason = install_sshd()
    if reason is not None:
        service_missing(reason)
    with tempfile.TemporaryDirectory(prefix="portal-sshd-") as folder:
        server = Sshd.create(Path(folder))
        server.start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture(name="running_sshd")
def running_sshd_fixture(sshd: Sshd) -> Sshd:
    # A test that stops the server leaves it stopped on failure: start it for the next one.
    if sshd.process is None:
        sshd.start()
    return sshd
