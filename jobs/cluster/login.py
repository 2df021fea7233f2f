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
    # Through an automation node whose key runs only the portal's wrapper
    # (docker/cluster-side/portal-remote): plain commands, no shell around them, no SFTP.
    commands_only: bool = False


@dataclass(frozen=True)
class CommandResult:
    exit_status: int  # -1 when the command ended without reporting one (killed by a signal)
    stdout: str
    stderr: str
    raw_stdout: bytes = field(default=b"", repr=False)  # as it came, for file reads


@dataclass(frozen=True)
class HostKey:
    line: str  # `ssh-ed25519 AAAA...`, ready to pin
    fingerprint: str  # `SHA256:...`, as `ssh-keygen -lf` prints it
