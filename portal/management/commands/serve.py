import contextlib
import os
import signal
import subprocess
import sys
import time
from types import FrameType

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from portal.env import env_int, env_str

# Celery's warm shutdown finishes the task at hand; past this, whatever is left is killed.
GRACE_SECONDS = 5.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


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


class Command(BaseCommand):
    help = (
        "Run the web server and a Celery worker with beat in the foreground; Ctrl-C stops both. "
        "HOST and PORT choose the address (default 127.0.0.1:8000)."
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

        # Each child leads its own process group, so a terminal's Ctrl-C reaches only this process:
        # it decides the order and the deadline, and can kill every grandchild at the end.
        children = {
            name: subprocess.Popen(command, process_group=0)
            for name, command in _commands(address).items()
        }
        self.stdout.write(
            f"\nThe portal is starting at http://{address}/ with a Celery worker and beat.\n"
            "Log in as the administrator that `manage.py ensure_admin` reported. "
            "Press Ctrl-C to stop.\n"
        )
        self.stdout.flush()

        exited = None
        while not stop_requests and exited is None:
            exited = next((name for name, p in children.items() if p.poll() is not None), None)
            time.sleep(0.2)

        # Whatever stopped us, each child gets what a terminal's Ctrl-C would send its group: both
        # stop cleanly on it, while a SIGTERM would also hit Celery's pool processes mid-shutdown.
        for process in children.values():
            if process.poll() is None:
                _signal_group(process, signal.SIGINT)
        # A second Ctrl-C while waiting skips the rest of the grace period.
        deadline = time.monotonic() + GRACE_SECONDS
        while (
            any(p.poll() is None for p in children.values())
            and time.monotonic() < deadline
            and len(stop_requests) < 2
        ):
            time.sleep(0.1)
        for process in children.values():
            # Also reaches grandchildren whose parent has already exited, so none is orphaned.
            _signal_group(process, signal.SIGKILL)
            process.wait()

        if exited is not None:
            code = children[exited].returncode
            raise CommandError(
                f"The {exited} process exited with status {code}; stopped the others.",
                returncode=code if code and code > 0 else 1,
            )
