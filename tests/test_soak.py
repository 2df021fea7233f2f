# `manage.py serve`, as `make run` starts it, under a steady stream of tasks from beat and from the
# web process for SOAK_SECONDS (10 minutes unless told less): its worker must never exit, each
# task must run exactly once, and the web server must answer every request. The filesystem broker
# that `make run` used before failed this: its worker read a message file still being written.
# `make test` runs it beside the other tests (pytest -m soak); SOAK_BROKER_URL tries another broker.

import os
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from tests.serving import Serve

pytestmark = [pytest.mark.soak, pytest.mark.service]

SECONDS = int(os.environ.get("SOAK_SECONDS", "600"))
# 2,000 tasks in ten minutes: beat sends one a second, the web process the rest in batches.
WEB_BATCH = 7
WEB_EVERY_SECONDS = 3.0
BEAT_SENT = "Sending due task soak-mark"


def waiting(folder: Path) -> int:
    """soak_mark messages still in the embedded broker (with SOAK_BROKER_URL: not counted)."""
    path = folder / "celery" / "broker.sqlite3"
    if not path.exists():
        return 0
    with closing(sqlite3.connect(path)) as broker:
        query = "SELECT count(*) FROM kombu_message WHERE visible = 1 AND payload LIKE ?"
        return broker.execute(query, ["%portal.tasks.soak_mark%"]).fetchone()[0]


def wait_until(check: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not check() and time.monotonic() < deadline:
        time.sleep(0.5)
    return check()


def marks(folder: Path) -> list[tuple[str, str]]:
    path = folder / "soak-marks.txt"
    lines = path.read_text().splitlines() if path.exists() else []
    return [tuple(line.split()) for line in lines]


def test_the_worker_runs_every_task_once_and_never_exits(tmp_path: Path) -> None:
    broker = (
        {"CELERY_BROKER_URL": os.environ["SOAK_BROKER_URL"]}
        if "SOAK_BROKER_URL" in os.environ
        else {}
    )
    serve = Serve(tmp_path, SOAK_HOOKS="true", **broker)
    try:
        serve.wait_ready()
        worker = serve.pid("worker")
        web_sent, refused, batches = 0, [], 0
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < SECONDS:
            try:
                web_sent += int(serve.post(f"/soak/enqueue/?count={WEB_BATCH}"))
            except OSError as exc:
                refused.append(f"{elapsed:.0f} s: {exc}")
            batches += 1
            time.sleep(max(0.0, started + batches * WEB_EVERY_SECONDS - time.monotonic()))

        def web_ran() -> bool:
            return sum(1 for _, source in marks(tmp_path) if source == "web") >= web_sent

        done = wait_until(web_ran, 60)
        worker_alive = serve.pid("worker") == worker and Path(f"/proc/{worker}").exists()
        stopped = serve.stop()
        # Beat may send one more as it stops, which then waits in the broker for the next start.
        beat_sent, left = serve.output().count(BEAT_SENT), waiting(tmp_path)
        ran = Counter(source for _, source in marks(tmp_path))
        ids = Counter(task_id for task_id, _ in marks(tmp_path))
        summary = (
            f"{SECONDS} s: web sent {web_sent}, beat sent {beat_sent}, ran {dict(ran)}, "
            f"left in the broker {left}, tasks run twice {sum(1 for n in ids.values() if n > 1)}, "
            f"JSONDecodeError {serve.output().count('JSONDecodeError')}, exits {serve.exits()}, "
            f"refused requests {refused}"
        )
        print(summary)
        assert not serve.exits() and worker_alive, summary
        assert not refused, summary
        # The serve output's end says how the stop went (a child killed after the grace period).
        ending = f"{summary}\n--- serve's output, its end:\n{serve.output()[-4000:]}"
        assert done and (ran["web"], ran["beat"] + left) == (web_sent, beat_sent), ending
        assert all(n == 1 for n in ids.values()), summary
        assert stopped == 0, serve.output()
    finally:
        serve.stop()
