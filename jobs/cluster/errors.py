"""The one error type of the cluster gateway, and every message it puts in front of a user.

A `ClusterError` says in plain words what went wrong and whether retrying can help. The
functions here build each of them, so that the wording lives in one place; the gateway
(jobs/cluster/gateway.py) decides which one a failure is. No paramiko here: what only a paramiko
exception class can tell apart is decided in the gateway.
"""

import errno
import socket
from enum import StrEnum

from jobs.cluster.login import Login


class ErrorKind(StrEnum):
    HOST_KEY_MISMATCH = "host_key_mismatch"
    AUTH_FAILED = "auth_failed"
    UNREACHABLE = "unreachable"
    TIMEOUT = "timeout"
    DISCONNECTED = "disconnected"
    PROTOCOL = "protocol"
    REMOTE_FILE = "remote_file"
    CONFIG = "config"
    SLURM_DOWN = "slurm_down"
    BUSY = "busy"


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


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def host_key_mismatch(login: Login, detail: str = "") -> ClusterError:
    return ClusterError(
        ErrorKind.HOST_KEY_MISMATCH,
        "The cluster's host key has changed: it does not match the key an admin confirmed. "
        "The portal refuses to connect until an admin checks and confirms the new key.",
        retryable=False,
        detail=detail or f"{login.host}:{login.port}",
    )


def auth_failed(login: Login, detail: str) -> ClusterError:
    return ClusterError(
        ErrorKind.AUTH_FAILED,
        f"The cluster refused the portal's SSH key for the account {login.username!r}. "
        "Add the portal's public key to ~/.ssh/authorized_keys on the cluster, then try again.",
        retryable=False,
        detail=detail,
    )


def disconnected(detail: str) -> ClusterError:
    return ClusterError(
        ErrorKind.DISCONNECTED,
        "The connection to the cluster was lost. Try again in a moment.",
        retryable=True,
        detail=detail,
    )


def timed_out(what: str, seconds: float, detail: str = "") -> ClusterError:
    return ClusterError(
        ErrorKind.TIMEOUT,
        f"The cluster did not answer in time ({what}, {seconds:g} s). Try again in a moment.",
        retryable=True,
        detail=detail,
    )


def command_timed_out(program: str, seconds: float, detail: str) -> ClusterError:
    return ClusterError(
        ErrorKind.TIMEOUT,
        f"{program} did not finish on the cluster within {seconds:g} s. Try again in a moment.",
        retryable=True,
        detail=detail,
    )


def connect_error(host: str, port: int, exc: BaseException, timeout: float) -> ClusterError:
    """Map what opening a TCP connection and the SSH handshake can raise.

    The gateway first picks out the one case only a paramiko class names: no_common_algorithm.
    """
    detail = f"{host}:{port}: {describe(exc)}"
    if isinstance(exc, socket.timeout | TimeoutError):
        return timed_out(f"connecting to {host}:{port}", timeout, detail)
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
    # EOF or a garbled banner mid-handshake: usually a server under load (MaxStartups) or a
    # restart. Worth another try; a persistent cause shows up in the logs through `detail`.
    return disconnected(detail)


def no_common_algorithm(host: str, port: int, exc: BaseException) -> ClusterError:
    return ClusterError(
        ErrorKind.PROTOCOL,
        f"The SSH server at {host}:{port} offers no algorithm the portal supports.",
        retryable=False,
        detail=f"{host}:{port}: {describe(exc)}",
    )


def bad_host_key(detail: str) -> ClusterError:
    return ClusterError(
        ErrorKind.CONFIG,
        "The pinned host key for this cluster is not a valid OpenSSH public key line. "
        "An admin must fetch and confirm it again.",
        retryable=False,
        detail=detail,
    )


def bad_private_key() -> ClusterError:
    # No detail: a key parser's message could quote the key text.
    return ClusterError(
        ErrorKind.CONFIG,
        "The portal's stored SSH key for this account could not be read. "
        "Generate a new key pair and add its public key on the cluster.",
        retryable=False,
    )


def no_more_sessions(detail: str) -> ClusterError:
    return ClusterError(
        ErrorKind.PROTOCOL,
        "The cluster refused to open another session. Try again in a moment.",
        retryable=True,
        detail=detail,
    )


def portal_busy(max_open: int, seconds: float) -> ClusterError:
    """Every one of the process's connections was in use for as long as a connect may take."""
    return ClusterError(
        ErrorKind.BUSY,
        "The portal is busy: all its connections to clusters are in use. Try again in a moment.",
        retryable=True,
        detail=f"all {max_open} pooled connections busy for {seconds:g} s (SSH_POOL_SIZE)",
    )


def remote_file_error(what: str, path: str, exc: OSError) -> ClusterError:
    reason = exc.strerror or str(exc) or "the server gave no reason"
    return ClusterError(
        ErrorKind.REMOTE_FILE,
        f"The cluster could not {what} {path}: {reason}.",
        retryable=False,
        detail=describe(exc),
    )


def slurm_not_answering(program: str, said: str) -> ClusterError:
    """squeue failed: the controller is down or overloaded. Nothing it said can be trusted."""
    said = " ".join(said.split()) or f"{program} exited with an error and said nothing"
    return ClusterError(
        ErrorKind.SLURM_DOWN,
        f"Slurm did not answer {program}: {said}. The jobs show what the last good poll saw.",
        retryable=True,
        detail=said,
    )
