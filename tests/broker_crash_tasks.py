"""Tasks for tests/test_broker_crash.py only, loaded into a test's worker with --include: one
that kills the broker before its own acknowledgement can reach it, and one to see that the
worker still takes work afterwards."""

import os
import signal

from celery import shared_task


@shared_task(name="tests.crash_broker", acks_late=True)
def crash_broker(pid: int) -> None:
    # Late acknowledgement, as the portal's submit_job: the message is still unacknowledged when
    # the broker dies, which is the moment a crash is most likely to catch a busy worker.
    os.kill(pid, signal.SIGKILL)


@shared_task(name="tests.still_working", acks_late=True)
def still_working() -> str:
    return "still working"
