"""`manage.py serve` in a subprocess, as `make run` starts it, and what its output says."""

import contextlib
import os
import re
import signal
import socket
import subprocess
import urllib.request
from pathlib import Path

from tests.processes import REPO, manage, portal_env, start_python
from tests.workers import wait

# serve's own lines about its children (portal/management/commands/serve.py).
STARTED = re.compile(r"serve: (?:started|restarted) the (\w+) process, pid (\d+)")
EXITED = re.compile(r"serve: the (\w+) process \(pid \d+\) exited with .*")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def healthz_ok(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz/", timeout=2) as response:
            return response.read() == b"ok"
    except OSError:
        return False


class Serve:
    """serve on a free port, with a migrated SQLite database and var/ folder in `folder`."""

    def __init__(self, folder: Path, **overrides: str) -> None:
        self.port = free_port()
        self.log = folder / "serve.log"
        self.env = portal_env(folder, PORT=str(self.port), **overrides)
        migrated = manage(self.env, "migrate", "--noinput")
        assert migrated.returncode == 0, migrated.stderr
        self.process: subprocess.Popen = start_python(
            self.env, self.log, str(REPO / "manage.py"), "serve"
        )

    def output(self) -> str:
        return self.log.read_text()

    def wait_ready(self, timeout: float = 60) -> None:
        wait(lambda: healthz_ok(self.port), timeout, f"/healthz/ to answer\n{self.output()}")
        wait(lambda: " ready." in self.output(), timeout, f"the worker\n{self.output()}")

    def pid(self, name: str) -> int:
        """The pid serve last started for that child."""
        pids = [int(pid) for child, pid in STARTED.findall(self.output()) if child == name]
        assert pids, f"serve started no {name} process\n{self.output()}"
        return pids[-1]

    def exits(self) -> list[str]:
        return [found.group(0) for found in EXITED.finditer(self.output())]

    def post(self, path: str) -> bytes:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.read()

    def stop(self) -> int:
        """Ctrl-C, as a terminal sends it; SIGKILL if serve has not stopped in 20 s."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
                for _, pid in STARTED.findall(self.output()):  # each leads its own group
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(int(pid), signal.SIGKILL)
        return self.process.returncode
