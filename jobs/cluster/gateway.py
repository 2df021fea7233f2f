"""The cluster gateway: every SSH command and SFTP transfer to a cluster goes through here.

This is the only module that imports paramiko (STYLE.md rule 3). It pins host keys, pools one
connection per cluster account (a bounded number of them), sets TCP_NODELAY (without it each round
trip waits ~40 ms for delayed ACKs: see ../shared/devcluster-facts.md), applies timeouts, and turns
every failure into a `ClusterError` that says, in plain words, what went wrong and whether retrying
can help.

What needs no paramiko lives beside it in jobs/cluster/: the errors and their wording (errors.py),
the `Login` callers hand in and the results they get back (login.py), the pool's bookkeeping
(pool.py), the file operations on the SFTP session (sftp_files.py) and, for an automation node
that offers no SFTP, through its wrapper's commands (command_files.py). No Django here: callers
load a `Login` from their models; only the pool's two limits default to settings.
"""

import base64
import binascii
import contextlib
import io
import logging
import select
import shlex
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence

import paramiko

from jobs.cluster import errors
from jobs.cluster.command_files import CommandFiles
from jobs.cluster.errors import ClusterError, describe
from jobs.cluster.login import CommandResult, HostKey, Login
from jobs.cluster.pool import ConnectionPool, Stale
from jobs.cluster.sftp_files import SftpFiles, SftpSession

logger = logging.getLogger(__name__)

KEEPALIVE_SECONDS = 30
# OpenSSH serves at most MaxSessions (default 10) channels per connection and refuses more. Keep
# commands below that, with room for the connection's SFTP session.
MAX_COMMANDS_PER_CONNECTION = 8
# Linux only; elsewhere the first command on a new connection may wait for a delayed ACK.
_TCP_QUICKACK = getattr(socket, "TCP_QUICKACK", None)
# Host key algorithms paramiko may be told to prefer, by the key type of an OpenSSH line.
_HOST_KEY_ALGORITHMS = {"ssh-rsa": ("rsa-sha2-512", "rsa-sha2-256")}


# -- the command line sent for a command -------------------------------------------------


def quoted(argv: list[str]) -> str:
    if any("\0" in arg for arg in argv):
        raise ValueError("an argument contains a NUL byte, which no command line can carry")
    return " ".join(shlex.quote(arg) for arg in argv)


def command_line(command: str, *, with_stdin: bool) -> str:
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


def _connect_error(host: str, port: int, exc: BaseException, timeout: float) -> ClusterError:
    if isinstance(exc, paramiko.IncompatiblePeer):
        return errors.no_common_algorithm(host, port, exc)
    return errors.connect_error(host, port, exc, timeout)


def _parse_host_key(login: Login) -> paramiko.PKey:
    fields = login.host_key.split()
    try:
        return paramiko.PKey.from_type_string(fields[0], base64.b64decode(fields[1], validate=True))
    except (IndexError, ValueError, binascii.Error, paramiko.SSHException) as exc:
        raise errors.bad_host_key(describe(exc)) from None


def _parse_private_key(login: Login) -> paramiko.PKey:
    # `from None`: a parser's message could quote the key text.
    for key_class in (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey):
        try:
            return key_class.from_private_key(io.StringIO(login.private_key))
        except Exception:
            continue
    raise errors.bad_private_key() from None


def _open_socket(host: str, port: int, timeout: float, nodelay: bool) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=timeout)
    if nodelay:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class _QuickAckSocket:
    """The connection's socket as paramiko reads it: it asks the kernel to ACK at once after
    every read.

    Without it the first channel opened on a new connection waits ~45 ms: sshd, which sets no
    TCP_NODELAY on a session without a terminal, holds a small reply (Nagle) until its previous
    small packet is ACKed, and our kernel delays that ACK 40 ms. TCP_QUICKACK wears off by
    itself, hence once per read. Measured on the dev cluster (median of 20): the first `true` on
    a new connection 49 -> 6 ms, connect + `true` 74 -> 34 ms; a pooled `true` unchanged (3 ms).
    """

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def recv(self, size: int) -> bytes:
        data = self.sock.recv(size)
        if data:
            with contextlib.suppress(OSError):
                self.sock.setsockopt(socket.IPPROTO_TCP, _TCP_QUICKACK, 1)
        return data

    def __getattr__(self, name: str) -> object:
        return getattr(self.sock, name)  # send, settimeout, close...: the socket's own


def _handshake(
    sock: socket.socket | _QuickAckSocket, timeout: float, prefer: str | None
) -> paramiko.Transport:
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
                raise Stale(describe(exc), dead=True) from exc
        self._sftp.get_channel().settimeout(timeout)
        return self._sftp

    def is_active(self) -> bool:
        return self.transport.is_active()

    def drop_sftp(self) -> None:
        if self._sftp is not None:
            self._sftp.close()
            self._sftp = None

    def close(self) -> None:
        self.drop_sftp()
        self.transport.close()


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


class Gateway(ConnectionPool[_Connection], SftpFiles):
    """Thread-safe pool of SSH connections, one per cluster account and key, at most `max_open`.

    Connections are kept open and shared by threads: each command runs in a channel of its own;
    one unused for `idle_seconds` is closed and opened again when next needed.
    A pooled connection found dead is replaced once, transparently; a second failure raises.
    The pool's bookkeeping is in jobs/cluster/pool.py; the file operations (write_file, mkdirs,
    read_tail, read_from, read_many, list_dir) are in jobs/cluster/sftp_files.py.
    """

    _request_errors = (OSError, EOFError, paramiko.SSHException)

    def __init__(
        self,
        *,
        nodelay: bool = True,
        max_open: int | None = None,
        idle_seconds: float | None = None,
    ) -> None:
        # The limits default to SSH_POOL_SIZE and SSH_IDLE_SECONDS (jobs/cluster/pool.py).
        super().__init__(max_open=max_open, idle_seconds=idle_seconds)
        # False only to measure what it saves (bench/gateway.py), TCP_QUICKACK's too.
        self.nodelay = nodelay
        self._command_files = CommandFiles(self.run)  # reads where no SFTP is offered

    # -- connections ------------------------------------------------------------------------

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
            quick = self.nodelay and _TCP_QUICKACK is not None
            transport = _handshake(
                _QuickAckSocket(sock) if quick else sock, timeout, prefer=pinned.get_name()
            )
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
                raise errors.host_key_mismatch(
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
                raise errors.disconnected(describe(exc)) from exc
            # paramiko tells a timeout from a refusal only by its message.
            if "timeout" in str(exc).lower():
                raise errors.timed_out(
                    "authenticating", login.connect_timeout, describe(exc)
                ) from exc
            raise errors.auth_failed(login, describe(exc)) from exc
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise _connect_error(login.host, login.port, exc, login.connect_timeout) from exc
        if further or not transport.is_authenticated():
            raise errors.auth_failed(login, f"server wants more: {further}")

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
        return self._run(login, quoted(argv), argv[0], stdin, timeout)

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
        set_args = f"set -- {quoted(args)}" if args else "set --"
        return self._run(login, f"{set_args}; {script}", program, stdin, timeout)

    def _run(
        self, login: Login, command: str, program: str, stdin: str | None, timeout: float | None
    ) -> CommandResult:
        if not login.commands_only:
            command = command_line(command, with_stdin=stdin is not None)
        # else the wrapper does what command_line does: /dev/null or the stdin drained.
        seconds = login.command_timeout if timeout is None else timeout
        deadline = time.monotonic() + seconds

        def operation(connection: _Connection) -> CommandResult:
            if not connection.command_slots.acquire(timeout=max(0, deadline - time.monotonic())):
                raise errors.timed_out(f"waiting to run {program}", seconds, "all channels busy")
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
                    raise errors.no_more_sessions(describe(exc)) from exc
                time.sleep(pause)
                pause = min(pause * 2, 0.2)
            except (OSError, EOFError, paramiko.SSHException) as exc:
                # No answer to a channel open: the connection is dead or hung. Nothing was sent
                # yet, so trying again on a fresh connection is safe.
                raise Stale(describe(exc), dead=True) from exc

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
                raise errors.command_timed_out(program, seconds, describe(exc)) from exc
            raise errors.disconnected(describe(exc)) from exc
        status = channel.recv_exit_status()
        if status == -1 and not channel.get_transport().is_active():
            # The channel ended because the connection did, not because the command did.
            raise errors.disconnected("connection lost while the command ran")
        raw = b"".join(stdout)
        return CommandResult(
            exit_status=status,
            stdout=raw.decode(errors="replace"),
            stderr=b"".join(stderr).decode(errors="replace"),
            raw_stdout=raw,
        )

    # -- files ------------------------------------------------------------------------------

    def read_tail(self, login: Login, path: str, max_bytes: int) -> bytes:
        if login.commands_only:
            return self._command_files.read_tail(login, path, max_bytes)
        return super().read_tail(login, path, max_bytes)

    def list_dir(self, login: Login, path: str) -> dict[str, int]:
        if login.commands_only:
            return self._command_files.list_dir(login, path)
        return super().list_dir(login, path)

    def read_many(
        self, login: Login, wanted: Sequence[tuple[str, int]], max_bytes: int
    ) -> list[tuple[bytes, int]]:
        if login.commands_only:
            return self._command_files.read_many(login, wanted, max_bytes)
        return super().read_many(login, wanted, max_bytes)

    def _sftp[T](self, login: Login, what: str, path: str, work: Callable[[SftpSession], T]) -> T:
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
                    raise errors.timed_out(
                        f"{what} {path}", login.command_timeout, describe(exc)
                    ) from exc
                except (EOFError, paramiko.SSHException, ConnectionError) as exc:
                    connection.drop_sftp()
                    alive = connection.transport.is_active()
                    raise Stale(describe(exc), dead=not alive) from exc
                except OSError as exc:
                    if not connection.transport.is_active():
                        raise Stale(describe(exc), dead=True) from exc
                    raise errors.remote_file_error(what, path, exc) from exc

        return self._with_connection(login, operation)


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
