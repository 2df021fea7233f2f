import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from types import FrameType

from django.conf import settings
from django.core.management.base import BaseCommand

from portal.env import env_int, env_str

# Celery's warm shutdown finishes the task at hand; past this, whatever is left is killed.
GRACE_SECONDS = 5.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# A child that exits is started again after 1 s, then 2, 4... up to the longest wait; one that had
# stayed up for STEADY_SECONDS starts again after 1 s, as after its first failure.
FIRST_RESTART_SECONDS = 1.0
LONGEST_RESTART_SECONDS = 60.0
STEADY_SECONDS = 60.0


def _commands(address: str) -> dict[str, list[str]]:
    manage = str(settings.BASE_DIR / "manage.py")
    return {
        # runserver keeps its autoreloader: code changes reload the web process, and Ctrl-C still
        # stops it cleanly because the signal goes to its whole process group (reloader and child).
        "web": [sys.executable, manage, "runserver", address],
        # The worker does not reload on code changes: restart `make run` after editing tasks.
        "worker": [
            sys.executable, "-m", "celery", "-A", "portal", "worker", "--beat",
            "--queues", f"celery,{settings.POLL_QUEUE}", "--loglevel=INFO", "--concurrency=2",
        ],
    }  # fmt: skip


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    # ProcessLookupError: the whole group is already gone.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signum)


def _status(code: int) -> str:
    if code >= 0:
        return f"status {code}"
    try:
        return f"signal {signal.Signals(-code).name}"
    except ValueError:  # a real-time signal has no name of its own
        return f"signal {-code}"


def restart_delay(failures: int) -> float:
    """Seconds before starting a child again after `failures` exits in a row."""
    return min(FIRST_RESTART_SECONDS * 2 ** (failures - 1), LONGEST_RESTART_SECONDS)


@dataclass
class _Child:
    name: str
    command: list[str]
    process: subprocess.Popen | None = None
    started: float = 0.0
    failures: int = 0  # exits in a row, each after less than STEADY_SECONDS
    restart_at: float = 0.0

    def start(self) -> None:
        # Each child leads its own process group, so a terminal's Ctrl-C reaches only serve: it
        # decides the order and the deadline, and can kill every grandchild at the end.
        self.process = subprocess.Popen(self.command, process_group=0)
        self.started = time.monotonic()

    def exited(self, now: float) -> float:
        """Forgets the exited process and says how long to wait before starting it again."""
        assert self.process
        # The pool processes of a killed worker outlive it in its group: they must not take
        # messages beside the new one.
        _signal_group(self.process, signal.SIGKILL)
        self.process = None
        self.failures = 1 if now - self.started >= STEADY_SECONDS else self.failures + 1
        delay = restart_delay(self.failures)
        self.restart_at = now + delay
        return delay


class Command(BaseCommand):
    help = (
        "Run the web server and a Celery worker with beat in the foreground, starting either "
        "again if it exits; Ctrl-C stops both. HOST and PORT choose the address "
        "(default 127.0.0.1:8000)."
    )
    # runserver runs the system checks itself; running them here too only doubles start-up time.
    requires_system_checks = []

    def handle(self, *args: object, **options: object) -> None:
        host = env_str("HOST", "127.0.0.1")
        port = env_int("PORT", 8000)
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        stop_requests: list[int] = []

        def request_stop(signum: int, frame: FrameType | None) -> None:
            stop_requests.append(signum)

        for signum in STOP_SIGNALS:
            signal.signal(signum, request_stop)

        children = [_Child(name, command) for name, command in _commands(address).items()]
        for child in children:
            child.start()
            self._say(f"started the {child.name} process, pid {child.process.pid}")
        self.stdout.write(
            f"\nThe portal is starting at http://{address}/ with a Celery worker and beat.\n"
            "Log in as the administrator that `manage.py ensure_admin` reported. "
            "Press Ctrl-C to stop.\n"
        )
        self.stdout.flush()

        while not stop_requests:
            self._supervise(children)
            time.sleep(0.2)
        self._stop([child.process for child in children if child.process], stop_requests)

    def _supervise(self, children: list[_Child]) -> None:
        # The web server is restarted too: runserver exits only on an error (its port taken, a
        # crash), and a portal that serves again by itself beats one that needs a person.
        now = time.monotonic()
        for child in children:
            if child.process is None:
                if now >= child.restart_at:
                    child.start()
                    self._say(f"restarted the {child.name} process, pid {child.process.pid}")
            elif (code := child.process.poll()) is not None:
                pid = child.process.pid
                delay = child.exited(now)
                self._say(
                    f"the {child.name} process (pid {pid}) exited with {_status(code)}; "
                    f"restarting it in {delay:g} s"
                )

    def _stop(self, processes: list[subprocess.Popen], stop_requests: list[int]) -> None:
        # Each child gets what a terminal's Ctrl-C would send its group: both stop cleanly on it,
        # while a SIGTERM would also hit Celery's pool processes mid-shutdown.
        for process in processes:
            if process.poll() is None:
                _signal_group(process, signal.SIGINT)
        # A second Ctrl-C while waiting skips the rest of the grace period.
        deadline = time.monotonic() + GRACE_SECONDS
        while (
            any(p.poll() is None for p in processes)
            and time.monotonic() < deadline
            and len(stop_requests) < 2
        ):
            time.sleep(0.1)
        for process in processes:
            if process.poll() is None:
                self._say(f"pid {process.pid} did not stop within {GRACE_SECONDS:g} s: killed")
            # Also reaches grandchildren whose parent has already exited, so none is orphaned.
            _signal_group(process, signal.SIGKILL)
            process.wait()

    def _say(self, line: str) -> None:
        self.stdout.write(f"[{datetime.now():%Y-%m-%d %H:%M:%S}] serve: {line}")
        self.stdout.flush()
