"""The cluster gateway: every SSH command and SFTP transfer to a cluster goes through here.

This is the only module that imports paramiko (STYLE.md rule 3). It pins host keys, pools one
connection per cluster account, sets TCP_NODELAY (without it each round trip waits ~40 ms for
delayed ACKs: see ../shared/devcluster-facts.md), applies timeouts, and turns every failure into a
`ClusterError` that says, in plain words, what went wrong and whether retrying can help.

No Django here: callers load a `Login` from their models and hand it in.
"""

import base64
import binascii
import contextlib
import errno
import hashlib
import io
import logging
import posixpath
import select
import shlex
import socket
import stat
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import paramiko

logger = logging.getLogger(__name__)

KEEPALIVE_SECONDS = 30
# OpenSSH serves at most MaxSessions (default 10) channels per connection and refuses more. Keep
# commands below that, with room for the connection's SFTP session.
MAX_COMMANDS_PER_CONNECTION = 8
# Host key algorithms paramiko may be told to prefer, by the key type of an OpenSSH line.
_HOST_KEY_ALGORITHMS = {"ssh-rsa": ("rsa-sha2-512", "rsa-sha2-256")}


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


class ErrorKind(StrEnum):
    HOST_KEY_MISMATCH = "host_key_mismatch"
    AUTH_FAILED = "auth_failed"
    UNREACHABLE = "unreachable"
    TIMEOUT = "timeout"
    DISCONNECTED = "disconnected"
    PROTOCOL = "protocol"
    REMOTE_FILE = "remote_file"
    CONFIG = "config"


class ClusterError(Exception):
    """A failure to talk to the cluster. `message` is for the user; `detail` for the logs."""

    def __init__(self, kind: ErrorKind, message: str, *, retryable: bool, detail: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retryable = retryable
        self.detail = detail

    def __repr__(self) -> str:
        return (
            f"ClusterError(kind={self.kind.value!r}, retryable={self.retryable}, {self.message!r})"
        )


def _host_key_mismatch(login: Login, detail: str = "") -> ClusterError:
    return ClusterError(
        ErrorKind.HOST_KEY_MISMATCH,
        "The cluster's host key has changed: it does not match the key an admin confirmed. "
        "The portal refuses to connect until an admin checks and confirms the new key.",
        retryable=False,
        detail=detail or f"{login.host}:{login.port}",
    )


def _auth_failed(login: Login, detail: str) -> ClusterError:
    return ClusterError(
        ErrorKind.AUTH_FAILED,
        f"The cluster refused the portal's SSH key for the account {login.username!r}. "
        "Add the portal's public key to ~/.ssh/authorized_keys on the cluster, then try again.",
        retryable=False,
        detail=detail,
    )


def _disconnected(detail: str) -> ClusterError:
    return ClusterError(
        ErrorKind.DISCONNECTED,
        "The connection to the cluster was lost. Try again in a moment.",
        retryable=True,
        detail=detail,
    )


def _timed_out(what: str, seconds: float, detail: str = "") -> ClusterError:
    return ClusterError(
        ErrorKind.TIMEOUT,
        f"The cluster did not answer in time ({what}, {seconds:g} s). Try again in a moment.",
        retryable=True,
        detail=detail,
    )


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _connect_error(host: str, port: int, exc: BaseException, timeout: float) -> ClusterError:
    """Map what opening a TCP connection and the SSH handshake can raise."""
    detail = f"{host}:{port}: {_describe(exc)}"
    if isinstance(exc, socket.timeout | TimeoutError):
        return _timed_out(f"connecting to {host}:{port}", timeout, detail)
    if isinstance(exc, socket.gaierror | ConnectionError) or (
        isinstance(exc, OSError)
        and exc.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN)
    ):
        return ClusterError(
            ErrorKind.UNREACHABLE,
            f"The portal could not reach the cluster at {host}:{port}. It may be down or "
            "unreachable from the portal; try again later.",
            retryable=True,
            detail=detail,
        )
    if isinstance(exc, paramiko.IncompatiblePeer):
        return ClusterError(
            ErrorKind.PROTOCOL,
            f"The SSH server at {host}:{port} offers no algorithm the portal supports.",
            retryable=False,
            detail=detail,
        )
    # EOF or a garbled banner mid-handshake: usually a server under load (MaxStartups) or a
    # restart. Worth another try; a persistent cause shows up in the logs through `detail`.
    return _disconnected(detail)


def _parse_host_key(login: Login) -> paramiko.PKey:
    fields = login.host_key.split()
    try:
        return paramiko.PKey.from_type_string(fields[0], base64.b64decode(fields[1], validate=True))
    except (IndexError, ValueError, binascii.Error, paramiko.SSHException) as exc:
        raise ClusterError(
            ErrorKind.CONFIG,
            "The pinned host key for this cluster is not a valid OpenSSH public key line. "
            "An admin must fetch and confirm it again.",
            retryable=False,
            detail=_describe(exc),
        ) from None


def _parse_private_key(login: Login) -> paramiko.PKey:
    # `from None` and no detail: a parser's message could quote the key text.
    for key_class in (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey):
        try:
            return key_class.from_private_key(io.StringIO(login.private_key))
        except Exception:
            continue
    raise ClusterError(
        ErrorKind.CONFIG,
        "The portal's stored SSH key for this account could not be read. "
        "Generate a new key pair and add its public key on the cluster.",
        retryable=False,
    ) from None


def _open_socket(host: str, port: int, timeout: float, nodelay: bool) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=timeout)
    if nodelay:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _handshake(sock: socket.socket, timeout: float, prefer: str | None) -> paramiko.Transport:
    """Run the SSH handshake on `sock` (key exchange only, no authentication)."""
    transport = paramiko.Transport(sock)
    # paramiko's own limits are a backstop a little behind ours, so that running out of time is
    # reported as a timeout rather than as whatever paramiko raises when its limit strikes.
    transport.banner_timeout = transport.handshake_timeout = timeout + 1
    transport.auth_timeout = timeout
    if prefer is not None:
        # Ask for the pinned key's type first, so that a server with several host keys shows the
        # one we know. A server without that type shows another, which then fails the pin.
        options = transport.get_security_options()
        first = _HOST_KEY_ALGORITHMS.get(prefer, (prefer,))
        options.key_types = [*first, *(t for t in options.key_types if t not in first)]
    done = threading.Event()
    try:
        # start_client(timeout=...) returns silently when it runs out of time: wait ourselves.
        transport.start_client(event=done)
        if not done.wait(timeout):
            raise TimeoutError("SSH handshake")
        if not transport.is_active():
            raise transport.get_exception() or EOFError("SSH handshake")
    except BaseException:
        transport.close()
        raise
    return transport


class _Connection:
    def __init__(self, transport: paramiko.Transport, sock: socket.socket) -> None:
        self.transport = transport
        self.sock = sock
        self._sftp: paramiko.SFTPClient | None = None
        # One SFTP session per connection, used by one caller at a time; commands run in
        # channels of their own and do not wait for it.
        self.sftp_lock = threading.Lock()
        self.command_slots = threading.BoundedSemaphore(MAX_COMMANDS_PER_CONNECTION)

    def sftp(self, open_timeout: float, timeout: float) -> paramiko.SFTPClient:
        """The connection's SFTP session, opened on first use; requests time out after timeout."""
        if self._sftp is None or self._sftp.get_channel().closed:
            try:
                channel = self.transport.open_session(timeout=open_timeout)
                with _closed_at(channel, time.monotonic() + open_timeout):
                    channel.invoke_subsystem("sftp")
                self._sftp = paramiko.SFTPClient(channel)
            except (OSError, EOFError, paramiko.SSHException) as exc:
                raise _Stale(_describe(exc), dead=True) from exc
        self._sftp.get_channel().settimeout(timeout)
        return self._sftp

    def drop_sftp(self) -> None:
        if self._sftp is not None:
            self._sftp.close()
            self._sftp = None

    def close(self) -> None:
        self.drop_sftp()
        self.transport.close()


class _Stale(Exception):
    """The connection failed before the operation changed anything, so it may be redone.

    `dead`: the connection itself is gone or hung and must be replaced; otherwise only the
    session that failed was (the SFTP one), and the connection is still good for others.
    """

    def __init__(self, detail: str, *, dead: bool) -> None:
        super().__init__(detail)
        self.dead = dead


def _user_path(path: str) -> str:
    # SFTP starts in the user's home directory, so `~/x` is just `x`.
    if path == "~":
        return "."
    return path[2:] if path.startswith("~/") else path


@contextlib.contextmanager
def _closed_at(channel: paramiko.Channel, deadline: float) -> Iterator[None]:
    """Close `channel` at `deadline` if still inside the block, to end a wait with no timeout."""
    watchdog = threading.Timer(max(0.0, deadline - time.monotonic()), channel.close)
    watchdog.daemon = True
    watchdog.start()
    try:
        yield
    finally:
        watchdog.cancel()


def _command_line(command: str, *, with_stdin: bool) -> str:
    """The shell command line for `command`, shaped so that paramiko cannot kill the connection.

    paramiko can send a channel's EOF (or data) just after it has answered the server's CLOSE,
    and OpenSSH then drops the whole connection, every other command on it included
    (paramiko issues #1115, #1705). So the server must never close a channel before our last
    message: without stdin we send none (stdin is /dev/null); with stdin, the shell drains it
    to our EOF before it exits, keeping the command's exit status. The drain is a builtin loop,
    not `cat`: a command that read its stdin (sbatch does) leaves nothing to drain, and a
    process started for nothing costs 4 ms.
    """
    if not with_stdin:
        return f"{command} </dev/null"
    drain = "while IFS= read -r portal_line; do :; done"
    return f"{command}; portal_status=$?; {drain}; exit $portal_status"


def _quoted(argv: list[str]) -> str:
    if any("\0" in arg for arg in argv):
        raise ValueError("an argument contains a NUL byte, which no command line can carry")
    return " ".join(shlex.quote(arg) for arg in argv)


class Gateway:
    """Thread-safe pool of SSH connections, one per cluster account and key.

    Connections are kept open and shared by threads: each command runs in a channel of its own.
    A pooled connection found dead is replaced once, transparently; a second failure raises.
    """

    def __init__(self, *, nodelay: bool = True) -> None:
        self.nodelay = nodelay  # False only to measure what it saves (bench/gateway.py)
        self.connections_opened = 0
        self._lock = threading.Lock()
        self._pool: dict[tuple, _Connection] = {}
        self._connecting: dict[tuple, threading.Lock] = {}

    # -- connections ------------------------------------------------------------------------

    @staticmethod
    def _pool_key(login: Login) -> tuple:
        # The key digest is part of the identity: a connection authenticated with one key is
        # never handed to a caller presenting another.
        digest = hashlib.sha256(login.private_key.encode()).hexdigest()
        return (login.host, login.port, login.username, login.host_key, digest)

    def _acquire(self, login: Login) -> tuple[_Connection, bool]:
        """Return a live connection for `login` and whether it came from the pool."""
        key = self._pool_key(login)
        with self._lock:
            connection = self._pool.get(key)
            if connection is not None and connection.transport.is_active():
                return connection, True
            connecting = self._connecting.setdefault(key, threading.Lock())
        # One thread connects per account; the others wait for it and share the result.
        with connecting:
            with self._lock:
                connection = self._pool.get(key)
                if connection is not None and connection.transport.is_active():
                    return connection, True
                stale = self._pool.pop(key, None)
            if stale is not None:
                stale.close()
            connection = self._connect(login)
            with self._lock:
                self._pool[key] = connection
                self.connections_opened += 1
            return connection, False

    def _discard(self, login: Login, connection: _Connection) -> None:
        with self._lock:
            if self._pool.get(self._pool_key(login)) is connection:
                del self._pool[self._pool_key(login)]
        connection.close()

    def _connect(self, login: Login) -> _Connection:
        pinned = _parse_host_key(login)
        private_key = _parse_private_key(login)
        started = time.monotonic()
        timeout = login.connect_timeout
        try:
            sock = _open_socket(login.host, login.port, timeout, self.nodelay)
        except OSError as exc:
            raise _connect_error(login.host, login.port, exc, timeout) from exc
        try:
            transport = _handshake(sock, timeout, prefer=pinned.get_name())
        except (OSError, EOFError, paramiko.SSHException) as exc:
            sock.close()
            raise _connect_error(login.host, login.port, exc, timeout) from exc
        try:
            offered = transport.get_remote_server_key()
            if offered != pinned:
                logger.warning(
                    "Host key mismatch for %s:%s: offered %s %s, pinned %s %s",
                    login.host,
                    login.port,
                    offered.get_name(),
                    offered.fingerprint,
                    pinned.get_name(),
                    pinned.fingerprint,
                )
                raise _host_key_mismatch(
                    login, f"offered {offered.get_name()} {offered.fingerprint}"
                )
            self._authenticate(transport, login, private_key)
        except BaseException:
            transport.close()
            raise
        transport.set_keepalive(KEEPALIVE_SECONDS)
        logger.info(
            "Connected to %s@%s:%s in %.0f ms",
            login.username,
            login.host,
            login.port,
            (time.monotonic() - started) * 1000,
        )
        return _Connection(transport, sock)

    @staticmethod
    def _authenticate(transport: paramiko.Transport, login: Login, key: paramiko.PKey) -> None:
        try:
            further = transport.auth_publickey(login.username, key)
        except paramiko.AuthenticationException as exc:
            if not transport.is_active():
                raise _disconnected(_describe(exc)) from exc
            # paramiko tells a timeout from a refusal only by its message.
            if "timeout" in str(exc).lower():
                raise _timed_out("authenticating", login.connect_timeout, _describe(exc)) from exc
            raise _auth_failed(login, _describe(exc)) from exc
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise _connect_error(login.host, login.port, exc, login.connect_timeout) from exc
        if further or not transport.is_authenticated():
            raise _auth_failed(login, f"server wants more: {further}")

    def _with_connection[T](self, login: Login, operation: Callable[[_Connection], T]) -> T:
        connection, pooled = self._acquire(login)
        try:
            return operation(connection)
        except _Stale as exc:
            if exc.dead:
                self._discard(login, connection)
            if not pooled:
                raise _disconnected(str(exc)) from exc
            logger.info(
                "Pooled connection to %s:%s failed (%s); retrying", login.host, login.port, exc
            )
        connection, _ = self._acquire(login)
        try:
            return operation(connection)
        except _Stale as exc:
            if exc.dead:
                self._discard(login, connection)
            raise _disconnected(str(exc)) from exc

    def connect(self, login: Login) -> None:
        """Open the pooled connection for `login` now unless it is open: a worker may warm up."""
        self._acquire(login)

    def close_all(self) -> None:
        with self._lock:
            connections = list(self._pool.values())
            self._pool.clear()
        for connection in connections:
            connection.close()

    # -- commands ---------------------------------------------------------------------------

    def run(
        self,
        login: Login,
        argv: list[str],
        stdin: str | None = None,
        timeout: float | None = None,
    ) -> CommandResult:
        """Run argv on the cluster and return its exit status and output.

        Each element is quoted with shlex.quote for the account's login shell (a POSIX shell:
        bash, sh, zsh), so no argument can add a command. A non-zero exit is a result, not an
        error: Slurm explains itself on stderr and the caller decides. Losing the connection or
        running past `timeout` (default `login.command_timeout`) raises ClusterError. After a
        timeout the channel is closed, but the remote process may run on until it finishes.

        Without `stdin` the command reads /dev/null. `stdin` (a script for sbatch) is sent whole
        before the output is read, so keep it well under the 2 MB channel window. Up to
        MAX_COMMANDS_PER_CONNECTION commands run at once per account; more wait their turn.
        """
        if not argv:
            raise ValueError("argv is empty")
        return self._run(login, _quoted(argv), argv[0], stdin, timeout)

    def run_script(
        self,
        login: Login,
        script: str,
        args: list[str],
        *,
        program: str,
        stdin: str | None = None,
        timeout: float | None = None,
    ) -> CommandResult:
        """Like run(), for a line of POSIX shell with `args` as "$1", "$2"...: two commands in
        one round trip, with no extra shell started. `script` is the portal's own constant text;
        only `args` come from users, and they arrive quoted, so they stay data. `program` names
        the command in error messages."""
        set_args = f"set -- {_quoted(args)}" if args else "set --"
        return self._run(login, f"{set_args}; {script}", program, stdin, timeout)

    def _run(
        self, login: Login, command: str, program: str, stdin: str | None, timeout: float | None
    ) -> CommandResult:
        command = _command_line(command, with_stdin=stdin is not None)
        seconds = login.command_timeout if timeout is None else timeout
        deadline = time.monotonic() + seconds

        def operation(connection: _Connection) -> CommandResult:
            if not connection.command_slots.acquire(timeout=max(0, deadline - time.monotonic())):
                raise _timed_out(f"waiting to run {program}", seconds, "all channels busy")
            try:
                channel = self._open_channel(connection, min(seconds, login.connect_timeout))
                try:
                    return self._exchange(channel, command, stdin, deadline, seconds, program)
                finally:
                    channel.close()
            finally:
                connection.command_slots.release()

        return self._with_connection(login, operation)

    @staticmethod
    def _open_channel(connection: _Connection, timeout: float) -> paramiko.Channel:
        deadline = time.monotonic() + timeout
        pause = 0.01
        while True:
            try:
                return connection.transport.open_session(
                    timeout=max(0.001, deadline - time.monotonic())
                )
            except paramiko.ChannelException as exc:
                # The connection is fine but the server refused one more channel: sshd frees a
                # finished session a moment after its close, so MaxSessions can bite briefly.
                if time.monotonic() + pause >= deadline:
                    raise ClusterError(
                        ErrorKind.PROTOCOL,
                        "The cluster refused to open another session. Try again in a moment.",
                        retryable=True,
                        detail=_describe(exc),
                    ) from exc
                time.sleep(pause)
                pause = min(pause * 2, 0.2)
            except (OSError, EOFError, paramiko.SSHException) as exc:
                # No answer to a channel open: the connection is dead or hung. Nothing was sent
                # yet, so trying again on a fresh connection is safe.
                raise _Stale(_describe(exc), dead=True) from exc

    @staticmethod
    def _exchange(
        channel: paramiko.Channel,
        command: str,
        stdin: str | None,
        deadline: float,
        seconds: float,
        program: str,
    ) -> CommandResult:
        stdout: list[bytes] = []
        stderr: list[bytes] = []

        def drain() -> None:
            while channel.recv_ready():
                stdout.append(channel.recv(65536))
            while channel.recv_stderr_ready():
                stderr.append(channel.recv_stderr(65536))

        def remaining() -> float:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(program)
            return left

        try:
            channel.settimeout(remaining())
            with _closed_at(channel, deadline):  # exec_command alone waits without a limit
                channel.exec_command(command)
            if stdin is not None:
                channel.sendall(stdin.encode())
                channel.shutdown_write()
            # EOF covers both streams; the exit status follows it.
            while not (channel.eof_received or channel.closed):
                drain()
                # The channel's fileno is readable while either stream has data, or at EOF.
                select.select([channel], [], [], remaining())
            drain()
            if not channel.status_event.wait(remaining()):
                raise TimeoutError(program)
            drain()
        except (OSError, EOFError, paramiko.SSHException) as exc:
            if isinstance(exc, TimeoutError) or time.monotonic() >= deadline:
                raise ClusterError(
                    ErrorKind.TIMEOUT,
                    f"{program} did not finish on the cluster within {seconds:g} s. "
                    "Try again in a moment.",
                    retryable=True,
                    detail=_describe(exc),
                ) from exc
            raise _disconnected(_describe(exc)) from exc
        status = channel.recv_exit_status()
        if status == -1 and not channel.get_transport().is_active():
            # The channel ended because the connection did, not because the command did.
            raise _disconnected("connection lost while the command ran")
        return CommandResult(
            exit_status=status,
            stdout=b"".join(stdout).decode(errors="replace"),
            stderr=b"".join(stderr).decode(errors="replace"),
        )

    # -- files ------------------------------------------------------------------------------

    def _sftp[T](
        self, login: Login, what: str, path: str, work: Callable[[paramiko.SFTPClient], T]
    ) -> T:
        """Run `work` with the connection's SFTP session, mapping its errors.

        Every SFTP operation here can be redone safely (writes go to a temporary name first), so
        any connection failure on a pooled connection earns one retry on a fresh one.
        """

        def operation(connection: _Connection) -> T:
            with connection.sftp_lock:
                try:
                    sftp = connection.sftp(login.connect_timeout, login.command_timeout)
                    return work(sftp)
                except TimeoutError as exc:
                    connection.drop_sftp()  # replies may still be in flight: start afresh
                    raise _timed_out(
                        f"{what} {path}", login.command_timeout, _describe(exc)
                    ) from exc
                except (EOFError, paramiko.SSHException, ConnectionError) as exc:
                    connection.drop_sftp()
                    alive = connection.transport.is_active()
                    raise _Stale(_describe(exc), dead=not alive) from exc
                except OSError as exc:
                    if not connection.transport.is_active():
                        raise _Stale(_describe(exc), dead=True) from exc
                    reason = exc.strerror or str(exc) or "the server gave no reason"
                    raise ClusterError(
                        ErrorKind.REMOTE_FILE,
                        f"The cluster could not {what} {path}: {reason}.",
                        retryable=False,
                        detail=_describe(exc),
                    ) from exc

        return self._with_connection(login, operation)

    def write_file(self, login: Login, path: str, data: bytes, mode: int = 0o644) -> None:
        """Write `data` to `path` (relative paths are in the home directory), replacing it whole.

        The data goes to a temporary name in the same directory and is renamed over `path`, so
        that a reader (sbatch) never sees half a file. The directory must exist: see mkdirs.
        """
        target = _user_path(path)
        directory, name = posixpath.split(target)
        temporary = posixpath.join(directory, f".{name}.{uuid.uuid4().hex[:12]}.tmp")

        def work(sftp: paramiko.SFTPClient) -> None:
            try:
                with sftp.open(temporary, "wb") as handle:
                    handle.set_pipelined(True)
                    handle.write(data)
                    handle.chmod(mode)
                sftp.posix_rename(temporary, target)
            except OSError as exc:
                # Tidy up after a refusal (a full disk, say), not after a timeout or a lost
                # connection, where the attempt would only wait again.
                if not isinstance(exc, TimeoutError | ConnectionError):
                    with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
                        sftp.remove(temporary)
                raise

        self._sftp(login, "write", path, work)

    def mkdirs(self, login: Login, path: str, mode: int = 0o755) -> None:
        """Create `path` and any missing parents, like `mkdir -p`."""
        target = _user_path(path)

        def make(sftp: paramiko.SFTPClient, directory: str) -> None:
            try:
                if stat.S_ISDIR(sftp.stat(directory).st_mode or 0):
                    return
                raise NotADirectoryError(errno.ENOTDIR, "it exists and is not a directory")
            except FileNotFoundError:
                pass
            parent = posixpath.dirname(directory.rstrip("/"))
            if parent and parent not in (directory, "/", "."):
                make(sftp, parent)
            try:
                sftp.mkdir(directory, mode)
            except OSError:
                # Another writer may have made it meanwhile; anything else is a real error.
                try:
                    made = stat.S_ISDIR(sftp.stat(directory).st_mode or 0)
                except OSError:
                    made = False
                if not made:
                    raise

        self._sftp(login, "create the directory", path, lambda sftp: make(sftp, target))

    def read_tail(self, login: Login, path: str, max_bytes: int) -> bytes:
        """The last `max_bytes` of the file; b"" when it does not exist (yet) or is empty."""
        data, _ = self._read(login, path, None, max_bytes)
        return data

    def read_from(self, login: Login, path: str, offset: int, max_bytes: int) -> tuple[bytes, int]:
        """Up to `max_bytes` from `offset`, and the offset to ask for next time.

        A missing file gives (b"", offset). A file now shorter than `offset` was truncated or
        replaced (Slurm truncates the output file of a requeued job): reading starts again from
        0, which the caller sees as new_offset != offset + len(data). Bytes are returned as they
        are; a line cut at max_bytes is the caller's to keep for next time.
        """
        if offset < 0:
            raise ValueError("offset must not be negative")
        return self._read(login, path, offset, max_bytes)

    def _read(
        self, login: Login, path: str, offset: int | None, max_bytes: int
    ) -> tuple[bytes, int]:
        if max_bytes < 0:
            raise ValueError("max_bytes must not be negative")
        target = _user_path(path)

        def work(sftp: paramiko.SFTPClient) -> tuple[bytes, int]:
            try:
                handle = sftp.open(target, "rb")
            except FileNotFoundError:
                return b"", offset or 0
            with handle:
                size = handle.stat().st_size or 0
                if offset is None:
                    start = max(0, size - max_bytes)
                else:
                    start = offset if offset <= size else 0
                count = min(max_bytes, size - start)
                if count <= 0:
                    return b"", start
                handle.seek(start)
                data = handle.read(count)
                return data, start + len(data)

        return self._sftp(login, "read", path, work)

    def read_many(
        self, login: Login, wanted: Sequence[tuple[str, int]], max_bytes: int
    ) -> list[tuple[bytes, int]]:
        """read_from() for many (path, offset) pairs, in order, over the one SFTP session.

        No command runs: a file with nothing new costs one stat request, one that grew a stat,
        an open, a read and a close. A file the server refuses to open counts as missing, so that
        one unreadable file does not hold the others back; only a lost connection raises.
        """
        if max_bytes < 0 or any(offset < 0 for _, offset in wanted):
            raise ValueError("offsets and max_bytes must not be negative")

        def one(sftp: paramiko.SFTPClient, path: str, offset: int) -> tuple[bytes, int]:
            target = _user_path(path)
            try:
                size = sftp.stat(target).st_size or 0
                start = offset if offset <= size else 0
                count = min(max_bytes, size - start)
                if count <= 0:
                    return b"", start
                with sftp.open(target, "rb") as handle:
                    handle.seek(start)
                    data = handle.read(count)
            except FileNotFoundError:
                return b"", offset
            except PermissionError as exc:
                logger.warning("The cluster refused to read %s: %s", path, _describe(exc))
                return b"", offset
            return data, start + len(data)

        def work(sftp: paramiko.SFTPClient) -> list[tuple[bytes, int]]:
            return [one(sftp, path, offset) for path, offset in wanted]

        return self._sftp(login, "read", f"{len(wanted)} files", work)

    def list_dir(self, login: Login, path: str) -> dict[str, int]:
        """The names and sizes of what directory `path` holds; {} when it does not exist."""

        def work(sftp: paramiko.SFTPClient) -> dict[str, int]:
            try:
                entries = sftp.listdir_attr(_user_path(path))
            except FileNotFoundError:
                return {}
            return {entry.filename: entry.st_size or 0 for entry in entries}

        return self._sftp(login, "list", path, work)


def fetch_host_key(host: str, port: int = 22, timeout: float = 10) -> HostKey:
    """Connect without authenticating and return the server's host key, for an admin to confirm.

    paramiko prefers ed25519, then ecdsa, then rsa, so this is the key it will check later.
    """
    try:
        sock = _open_socket(host, port, timeout, nodelay=True)
    except OSError as exc:
        raise _connect_error(host, port, exc, timeout) from exc
    try:
        transport = _handshake(sock, timeout, prefer=None)
    except (OSError, EOFError, paramiko.SSHException) as exc:
        sock.close()
        raise _connect_error(host, port, exc, timeout) from exc
    try:
        key = transport.get_remote_server_key()
    finally:
        transport.close()
    return HostKey(line=f"{key.get_name()} {key.get_base64()}", fingerprint=key.fingerprint)


# The worker process's gateway: tasks share its connections.
gateway = Gateway()
