"""The dev cluster (docker/devcluster/devcluster) as a pytest fixture: a real Slurm over ssh.

Tests that need it take the session-scoped `devcluster` fixture (tests/conftest.py imports it).
The first use in a session runs `devcluster up` (about 3 s when the packages are installed, 20 s
when it has to install them); the cluster is left running for the next session. Tests of two
clusters take `second_devcluster` as well: the second, differently shaped cluster beside the
first (`devcluster up --second`, about 3 s).
"""

import os
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.services import service_missing

DEVCLUSTER = Path(__file__).resolve().parent.parent / "docker" / "devcluster" / "devcluster"
# What `devcluster up` makes for pending states (ONE_GPU_QOS and LATER_RESERVATION there): a QOS
# that allows a user one GPU at a time, and a reservation of rtx-1 a month ahead.
ONE_GPU_QOS = "one-gpu"
LATER_RESERVATION = "portal-later"


@dataclass(frozen=True)
class DevCluster:
    """What `devcluster env` prints, plus a known_hosts file that pins the host key."""

    host: str
    port: int
    user: str
    key: Path
    host_key: str  # "ssh-ed25519 AAAA..."
    name: str  # the Slurm cluster's name
    known_hosts: Path
    lab: Path  # the lab directory: configs, logs, the nodes' local disks (nodes/<node>/...)
    # The automation node: the same user's key, forced through docker/cluster-side/portal-remote.
    automation_port: int = 0
    which: tuple[str, ...] = ()  # what picks this cluster on the script's command line

    def ssh(self, command: str, timeout: float = 30) -> subprocess.CompletedProcess:
        """Runs a shell command as the test user with OpenSSH (about 0.3 s a call)."""
        return self.openssh(self.port, [command], timeout=timeout)

    def openssh(
        self, port: int, args: list[str], stdin: str | None = None, timeout: float = 30
    ) -> subprocess.CompletedProcess:
        """OpenSSH's client as the test user on one of the dev cluster's sshds; `args` go after
        the destination (a command line), or before it where they are options (-tt, -s)."""
        argv = ["ssh", "-i", str(self.key), "-p", str(port)]
        for option in (
            "BatchMode=yes",
            "IdentitiesOnly=yes",
            "StrictHostKeyChecking=yes",
            f"UserKnownHostsFile={self.known_hosts}",
            "LogLevel=ERROR",
        ):
            argv += ["-o", option]
        options = [a for a in args if a.startswith("-")]
        command = [a for a in args if not a.startswith("-")]
        return subprocess.run(
            [*argv, *options, f"{self.user}@{self.host}", *command],
            capture_output=True,
            text=True,
            timeout=timeout,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
        )

    def on_node(self, node: str, command: str, timeout: float = 30) -> subprocess.CompletedProcess:
        """Runs a shell command as root on a node: in its mount namespace, so /localscratch and
        /processing are that node's own disks."""
        return subprocess.run(
            [str(DEVCLUSTER), "node", *self.which, node, "sh", "-c", command],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def as_operator(self, *argv: str, timeout: float = 30) -> str:
        """Runs a Slurm command as root on this machine, as the cluster's administrators do
        (draining a node, say; the test user may not), and returns what it printed."""
        env = {
            "SLURM_CONF": str(self.lab / "etc" / "slurm.conf"),
            "PATH": "/usr/sbin:/usr/bin:/bin",
        }
        done = subprocess.run(
            list(argv),
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, f"{shlex.join(argv)}: {done.stdout}{done.stderr}"
        return done.stdout

    @contextmanager
    def drained(self, node: str) -> Iterator[None]:
        """The node drained for as long as the block runs, and resumed after, whatever happens."""
        self.as_operator(
            "scontrol", "update", f"nodename={node}", "state=drain", "reason=portal test"
        )
        try:
            yield
        finally:
            self.as_operator("scontrol", "update", f"nodename={node}", "state=resume")


def read_env(text: str) -> dict[str, str]:
    values = {}
    for line in text.splitlines():
        if line.strip():
            [word] = shlex.split(line)
            key, _, value = word.partition("=")
            values[key] = value
    return values


@pytest.fixture(scope="session")
def devcluster(tmp_path_factory) -> DevCluster:
    return _up(tmp_path_factory)


@pytest.fixture(scope="session")
def second_devcluster(devcluster, tmp_path_factory) -> DevCluster:
    """The second cluster (`devcluster up --second`), which runs on the first's munged and
    MariaDB: started after it."""
    return _up(tmp_path_factory, "--second")


def _up(tmp_path_factory, *which: str) -> DevCluster:
    if os.geteuid() != 0:
        service_missing("the dev cluster needs root (it installs packages and starts daemons)")
    if shutil.which("apt-get") is None:
        service_missing("the dev cluster needs Debian's apt-get")
    up = subprocess.run(
        [str(DEVCLUSTER), "up", *which],
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )
    if up.returncode != 0:
        pytest.fail(f"devcluster up {' '.join(which)} failed:\n{up.stdout}{up.stderr}")
    env = subprocess.run(
        [str(DEVCLUSTER), "env", *which], capture_output=True, text=True, check=True, timeout=30
    )
    values = read_env(env.stdout)
    host, port = values["DEVCLUSTER_HOST"], int(values["DEVCLUSTER_PORT"])
    known_hosts = tmp_path_factory.mktemp("devcluster") / "known_hosts"
    automation_port = int(values.get("DEVCLUSTER_AUTOMATION_PORT", 0))
    known_hosts.write_text(
        "".join(
            f"[{host}]:{p} {values['DEVCLUSTER_HOST_KEY']}\n" for p in (port, automation_port) if p
        )
    )
    return DevCluster(
        host=host,
        port=port,
        user=values["DEVCLUSTER_USER"],
        key=Path(values["DEVCLUSTER_KEY"]),
        host_key=values["DEVCLUSTER_HOST_KEY"],
        name=values["DEVCLUSTER_NAME"],
        known_hosts=known_hosts,
        lab=Path(values["DEVCLUSTER_LAB"]),
        automation_port=automation_port,
        which=which,
    )
