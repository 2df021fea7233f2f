# Redis dies while a worker holds a late-acknowledged task (the portal's submissions are all
# acknowledged late). The worker must reconnect once Redis is back and take the next task, not
# exit: Celery 5.7.0's worker exited here ("Unrecoverable error: AttributeError") when it closed
# the broken connection, which is why requirements.in keeps Celery below 5.7. A deployment
# restarts a worker that exits, but every task it was running would wait for Redis's visibility
# timeout (an hour) to run again.

import time
from pathlib import Path

import pytest

from portal.celery import app
from tests.workers import OwnRedis, own_redis_server, print_logs, wait, worker, worker_env

pytestmark = pytest.mark.service


@pytest.fixture
def own_redis(tmp_path: Path):
    yield from own_redis_server(tmp_path, persistent=True)


def test_a_worker_outlives_a_redis_crash_before_its_acknowledgement(
    own_redis: OwnRedis, tmp_path: Path
) -> None:
    env = worker_env(tmp_path, own_redis.url)
    log = tmp_path / "worker.log"
    include = "--include=tests.broker_crash_tasks"
    with worker(env, log, "celery", include, "--concurrency=2") as process:
        try:
            wait(lambda: "ready." in log.read_text(), 60, "the worker to start")
            assert own_redis.process
            with app.connection_for_write(own_redis.url) as conn:
                app.send_task("tests.crash_broker", [own_redis.process.pid], connection=conn)
            own_redis.process.wait(timeout=30)
            time.sleep(1)
            own_redis.start()
            with app.connection_for_write(own_redis.url) as conn:
                sent = app.send_task("tests.still_working", connection=conn).id
            done = f"still_working[{sent}] succeeded"
            wait(
                lambda: process.poll() is not None or done in log.read_text(),
                60,
                "the worker to take a task after Redis came back",
            )
            assert process.poll() is None, "the worker exited when Redis died"
            assert "Unrecoverable error" not in log.read_text()
        except BaseException:
            print_logs(tmp_path)
            raise
