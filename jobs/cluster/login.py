"""What the cluster gateway takes and hands back: plain data, no paramiko and no Django.

Callers load a `Login` from their models (jobs/cluster/remote.py: login_for) and hand it in.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Login:
    """One cluster account as the portal reaches it.

    `private_key` is OpenSSH PEM text; it is left out of repr() so that it never reaches a log or
    an error report that prints locals. `host_key` is the pinned line an admin confirmed, e.g.
    `ssh-ed25519 AAAA... [comment]`. `connect_timeout` bounds each step of connecting (TCP,
    SSH handshake, authentication, opening a channel); `command_timeout` is run()'s default and
    bounds each SFTP request.
    """

    host: str
    port: int
    username: str
    private_key: str = field(repr=False)
    host_key: str
    connect_timeout: float = 10.0
    command_timeout: float = 30.0


@dataclass(frozen=True)
class CommandResult:
    exit_status: int  # -1 when the command ended without reporting one (killed by a signal)
    stdout: str
    stderr: str


@dataclass(frozen=True)
class HostKey:
    line: str  # `ssh-ed25519 AAAA...`, ready to pin
    fingerprint: str  # `SHA256:...`, as `ssh-keygen -lf` prints it
