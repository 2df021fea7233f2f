from celery import Task, shared_task
from django.conf import settings

from portal import broker


@shared_task
def ping() -> str:
    # Lets tests and operators check the whole path: broker, worker, result backend.
    return "pong"


@shared_task
def prune_broker() -> int:
    """Beat's housekeeping of the embedded broker (portal/broker.py)."""
    return broker.prune(settings.BROKER_SQLITE_PATH) if settings.BROKER_SQLITE_PATH else 0


@shared_task(bind=True)
def soak_mark(self: Task, source: str) -> None:
    """Test only (SOAK_HOOKS): one line per run, so that tests/test_soak.py can tell that each
    message ran exactly once. A single short append is atomic between processes."""
    with (settings.VAR_DIR / "soak-marks.txt").open("a") as marks:
        marks.write(f"{self.request.id} {source}\n")
