from celery import shared_task


@shared_task
def ping() -> str:
    # Lets tests and operators check the whole path: broker, worker, result backend.
    return "pong"
