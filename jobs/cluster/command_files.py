"""The gateway's file reads where no SFTP is offered: a login through an automation node, whose
key runs only the portal's wrapper (docker/cluster-side/portal-remote). Each read is one of the
commands it allows: tail for a file's end, find for a folder, stat and dd for a byte range.

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
        """read_many as over SFTP: a stat for each file, and a dd for each that grew."""
        if max_bytes < 0 or any(offset < 0 for _, offset in wanted):
            raise ValueError("offsets and max_bytes must not be negative")
        return [
            self._read_from(login, user_path(path), offset, max_bytes) for path, offset in wanted
        ]

    def _read_from(self, login: Login, path: str, offset: int, max_bytes: int) -> tuple[bytes, int]:
        sized = self._read(login, ["stat", "-c", "%s", path])
        if sized is None or not sized.stdout.strip().isdigit():
            return b"", offset
        size = int(sized.stdout.strip())
        start = offset if offset <= size else 0  # shorter than before: replaced, read anew
        count = min(max_bytes, size - start)
        if count <= 0:
            return b"", start
        argv = ["dd", f"if={path}", "iflag=skip_bytes,count_bytes", f"skip={start}"]
        read = self._read(login, [*argv, f"count={count}", "status=none"])
        data = read.raw_stdout if read else b""
        return data, start + len(data)
