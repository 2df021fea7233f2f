"""E-mails, sent after the transaction that recorded their events has committed. A worker sends
only the rows it claims (a conditional UPDATE), so two workers never send one twice; one that
fails is tried again at later polls, up to MAX_ATTEMPTS. A worker killed between its claim and
its send leaves the row claimed: that e-mail is lost rather than sent twice."""

import logging
import smtplib

from django.conf import settings
from django.core.mail import send_mail
from django.db.models import F
from django.urls import reverse
from django.utils import timezone

from jobs.models import EmailStatus, Notification
from jobs.notify.messages import describe

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 5


def send_due() -> int:
    """Sends the e-mails due: how many were sent. Any worker may call it at any time."""
    due = Notification.objects.filter(email_status=EmailStatus.DUE)
    sent = 0
    for notification in due.select_related("job", "owner").order_by("pk"):
        if _claim(notification):
            sent += _send(notification)
    return sent


def _claim(notification: Notification) -> bool:
    claimed = Notification.objects.filter(pk=notification.pk, email_status=EmailStatus.DUE)
    return claimed.update(email_status=EmailStatus.SENDING) == 1


def _send(notification: Notification) -> int:
    this = Notification.objects.filter(pk=notification.pk)
    address = notification.owner.email
    if not address:
        this.update(email_status=EmailStatus.FAILED)  # their page still lists it
        return 0
    message = describe(notification)
    link = settings.PORTAL_URL.rstrip("/") + notification.job.get_absolute_url()
    body = f"{message.what}\n\n{message.todo}\n\nThe job's page: {link}\n".replace("\n\n\n", "\n\n")
    settings_link = settings.PORTAL_URL.rstrip("/") + reverse("jobs:notification_settings")
    body += f"\nWhat the portal tells you, and how: {settings_link}\n"
    try:
        send_mail(f"[GPU portal] {message.title}", body, None, [address])
    except (smtplib.SMTPException, OSError) as error:
        attempts = notification.email_attempts + 1
        status = EmailStatus.FAILED if attempts >= MAX_ATTEMPTS else EmailStatus.DUE
        logger.warning("E-mail about job %s not sent (%s): %s", notification.job_id, status, error)
        this.update(email_status=status, email_attempts=F("email_attempts") + 1)
        return 0
    this.update(email_status=EmailStatus.SENT, emailed=timezone.now())
    return 1
