# serve starts its worker again when the worker dies (SIGKILL to its whole process group, beat and
# pool included), while the web server goes on answering; a task sent while no worker runs waits
# in the embedded broker and runs once the new worker is up.

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from portal.management.commands.serve import restart_delay
from tests.serving import Serve, healthz_ok
from tests.workers import wait


def test_it_waits_longer_after_each_exit_in_a_row_up_to_a_minute() -> None:
    assert [restart_delay(n) for n in range(1, 9)] == [1, 2, 4, 8, 16, 32, 60, 60]


@pytest.mark.service  # serve, its web server and its worker
def test_it_restarts_a_killed_worker_while_the_web_server_answers(tmp_path: Path) -> None:
    serve = Serve(tmp_path, SOAK_HOOKS="true")
    failures: list[float] = []
    watching = threading.Event()

    def watch() -> None:
        while not watching.is_set():
            if not healthz_ok(serve.port):
                failures.append(time.monotonic())
            time.sleep(0.2)

    watcher = threading.Thread(target=watch)
    try:
        serve.wait_ready()
        watcher.start()
        web, worker = serve.pid("web"), serve.pid("worker")
        ready_before = serve.output().count(" ready.")

        killed_at = time.monotonic()
        os.killpg(worker, signal.SIGKILL)
        exited = wait(serve.exits, 10, f"serve to see the worker exit\n{serve.output()}")
        assert "the worker process" in exited[0] and "signal SIGKILL" in exited[0], exited
        # Sent while no worker runs: the message must wait in the broker.
        assert serve.post("/soak/enqueue/?count=1") == b"1"

        wait(lambda: serve.pid("worker") != worker, 10, f"a new worker\n{serve.output()}")
        wait(
            lambda: serve.output().count(" ready.") > ready_before,
            60,
            f"the new worker to be ready\n{serve.output()}",
        )
        back_after = time.monotonic() - killed_at
        marks = tmp_path / "soak-marks.txt"
        wait(lambda: marks.exists() and " web\n" in marks.read_text(), 30, "the task to run")
        print(f"the worker was ready again {back_after:.1f} s after the kill")
        assert Path(f"/proc/{serve.pid('worker')}").exists()
        assert serve.pid("web") == web and len(serve.exits()) == 1, serve.output()
        assert not failures, f"/healthz/ failed {len(failures)} times\n{serve.output()}"
        assert serve.stop() == 0, serve.output()
    finally:
        watching.set()
        if watcher.is_alive():
            watcher.join()
        serve.stop()
