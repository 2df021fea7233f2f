"""The gateway's file operations: reads and writes on the cluster over its SFTP session.

`SftpFiles` is a part of `Gateway` (jobs/cluster/gateway.py), kept here because none of it needs
paramiko: each operation is one piece of work that the gateway's `_sftp` runs on the pooled
connection's SFTP session, mapping what it raises to a ClusterError and redoing it once on a
fresh connection when a pooled one has died.
"""

import contextlib
import errno
import logging
import posixpath
import stat
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from jobs.cluster.errors import describe
from jobs.cluster.login import Login

# Logged under the gateway's name, with the rest of what it logs.
logger = logging.getLogger("jobs.cluster.gateway")


class SftpSession(Protocol):
    """What the operations use of an SFTP session (paramiko's SFTPClient, in the gateway)."""

    def open(self, filename: str, mode: str = "r") -> Any: ...
    def stat(self, path: str) -> Any: ...
    def mkdir(self, path: str, mode: int = 0o777) -> Any: ...
    def posix_rename(self, oldpath: str, newpath: str) -> Any: ...
    def remove(self, path: str) -> Any: ...
    def listdir_attr(self, path: str = ".") -> list[Any]: ...


def user_path(path: str) -> str:
    # SFTP starts in the user's home directory, so `~/x` is just `x`.
    if path == "~":
        return "."
    return path[2:] if path.startswith("~/") else path


class SftpFiles:
    # What a failed SFTP request may raise; the gateway's list names paramiko's own error.
    _request_errors: tuple[type[Exception], ...]

    def _sftp[T](self, login: Login, what: str, path: str, work: Callable[[SftpSession], T]) -> T:
        raise NotImplementedError  # the gateway's

    def write_file(self, login: Login, path: str, data: bytes, mode: int = 0o644) -> None:
        """Write `data` to `path` (relative paths are in the home directory), replacing it whole.

        The data goes to a temporary name in the same directory and is renamed over `path`, so
        that a reader (sbatch) never sees half a file. The directory must exist: see mkdirs.
        """
        target = user_path(path)
        directory, name = posixpath.split(target)
        temporary = posixpath.join(directory, f".{name}.{uuid.uuid4().hex[:12]}.tmp")

        def work(sftp: SftpSession) -> None:
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
                    with contextlib.suppress(*self._request_errors):
                        sftp.remove(temporary)
                raise

        self._sftp(login, "write", path, work)

    def mkdirs(self, login: Login, path: str, mode: int = 0o755) -> None:
        """Create `path` and any missing parents, like `mkdir -p`."""
        target = user_path(path)

        def make(sftp: SftpSession, directory: str) -> None:
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
        target = user_path(path)

        def work(sftp: SftpSession) -> tuple[bytes, int]:
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

        def one(sftp: SftpSession, path: str, offset: int) -> tuple[bytes, int]:
            target = user_path(path)
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
                logger.warning("The cluster refused to read %s: %s", path, describe(exc))
                return b"", offset
            return data, start + len(data)

        def work(sftp: SftpSession) -> list[tuple[bytes, int]]:
            return [one(sftp, path, offset) for path, offset in wanted]

        return self._sftp(login, "read", f"{len(wanted)} files", work)

    def list_dir(self, login: Login, path: str) -> dict[str, int]:
        """The names and sizes of what directory `path` holds; {} when it does not exist."""

        def work(sftp: SftpSession) -> dict[str, int]:
            try:
                entries = sftp.listdir_attr(user_path(path))
            except FileNotFoundError:
                return {}
            return {entry.filename: entry.st_size or 0 for entry in entries}

        return self._sftp(login, "list", path, work)
