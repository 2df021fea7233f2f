"""The gateway's file reads where no SFTP is offered: a login through an automation node, whose
key runs only the portal's wrapper (docker/cluster-side/portal-remote). Each read is one of the
commands it allows: tail for a file's end, find for a folder, and its own portal-read for what
many files hold past their offsets, in one command.

Like SftpFiles, this needs no paramiko: it runs commands through the gateway's `run`, with the
same answers as the SFTP reads (b"" or {} for what is not there, offsets as read_from keeps them).
"""

from collections.abc import Callable, Sequence

from jobs.cluster.errors import ClusterError, ErrorKind
from jobs.cluster.login import CommandResult, Login
from jobs.cluster.sftp_files import user_path

REFUSED = 97  # the wrapper's status for a command it does not run
LIST_FORMAT = "%s %f\\n"  # find's own escape: one "size name" line per entry

Run = Callable[[Login, list[str]], CommandResult]


def refused(result: CommandResult) -> ClusterError:
    said = result.stderr.strip() or "no reason given"
    return ClusterError(
        ErrorKind.CONFIG,
        "The automation node's portal-remote refused what the portal asked "
        f"({said}): is the wrapper installed there the one this portal ships?",
        retryable=False,
    )


class CommandFiles:
    def __init__(self, run: Run) -> None:
        self._run = run

    def _read(self, login: Login, argv: list[str]) -> CommandResult | None:
        """The command's result; None when it failed, as a missing file makes it fail."""
        result = self._run(login, argv)
        if result.exit_status == REFUSED:
            raise refused(result)
        return result if result.exit_status == 0 else None

    def read_tail(self, login: Login, path: str, max_bytes: int) -> bytes:
        result = self._read(login, ["tail", "-c", str(max_bytes), user_path(path)])
        return result.raw_stdout if result else b""

    def list_dir(self, login: Login, path: str) -> dict[str, int]:
        argv = ["find", user_path(path), "-mindepth", "1", "-maxdepth", "1", "-printf"]
        result = self._read(login, [*argv, LIST_FORMAT])
        listed = {}
        for line in (result.stdout if result else "").splitlines():
            size, _, name = line.partition(" ")
            if size.isdigit() and name:
                listed[name] = int(size)
        return listed

    def read_many(
        self, login: Login, wanted: Sequence[tuple[str, int]], max_bytes: int
    ) -> list[tuple[bytes, int]]:
        """read_many as over SFTP, in one portal-read: its answer is, for each file, a line
        "<start> <length>" and that many bytes, or "- 0" when the file cannot be opened."""
        if max_bytes < 0 or any(offset < 0 for _, offset in wanted):
            raise ValueError("offsets and max_bytes must not be negative")
        if not wanted:
            return []
        pairs = [value for path, offset in wanted for value in (user_path(path), str(offset))]
        result = self._read(login, ["portal-read", str(max_bytes), *pairs])
        rest = result.raw_stdout if result else b""
        read = []
        for _, offset in wanted:
            line, _, rest = rest.partition(b"\n")
            start, _, length = line.partition(b" ")
            if not (start.isdigit() and length.isdigit()):
                read.append((b"", offset))  # not there (or no answer at all)
                continue
            data, rest = rest[: int(length)], rest[int(length) :]
            read.append((data, int(start) + len(data)))
        return read
