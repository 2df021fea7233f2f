"""The shell command line the gateway sends for a command: its arguments quoted, and its end
shaped so that paramiko cannot take the connection down with it."""

import shlex


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
