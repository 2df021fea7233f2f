"""The notification pages: the list, the header's unread count (htmx polls it on every page), the
claim of new ones by the page's Web Notifications script, the user's default and a job's own
choice. A user sees and changes only their own."""

from datetime import timedelta

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from guidance.nul import checks_nul_per_field
from jobs.models import Job, JobNotificationChoice, Notification, Plan
from jobs.notify.choices import choice_for, defaults_of
from jobs.notify.forms import DefaultsForm, JobChoiceForm
from jobs.notify.messages import describe

PAGE_SIZE = 25
# The browser shows only what is this recent: a page opened after a week away shows no backlog.
PUSH_WITHIN = timedelta(hours=1)


def _listed(request: HttpRequest):
    return Notification.objects.filter(owner=request.user, in_browser=True)


@login_required
@require_safe
def notifications(request: HttpRequest) -> HttpResponse:
    page = Paginator(_listed(request).select_related("job"), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    rows = [(n, describe(n)) for n in page]
    response = render(request, "jobs/notifications.html", {"page": page, "rows": rows})
    # Shown, so read: the unread ones were marked as such in this answer.
    _listed(request).filter(pk__in=[n.pk for n in page], read=False).update(read=True)
    return response


@login_required
@require_safe
def notification_count(request: HttpRequest) -> HttpResponse:
    """The header's link with the unread count; it says when there are new ones for the
    browser to show, so that the script asks for them only then."""
    listed = _listed(request)
    ctx = {
        "unread": listed.filter(read=False).count(),
        "unpushed": _pushable(listed).exists(),
        "refresh_seconds": settings.NOTIFICATION_REFRESH_SECONDS,
        "waiting_plans": Plan.waiting_count(request.user),
    }
    return render(request, "jobs/notification_count.html", ctx)


def _pushable(listed):
    return listed.filter(pushed=False, created__gte=timezone.now() - PUSH_WITHIN)


@login_required
@require_POST
def notifications_push(request: HttpRequest) -> JsonResponse:
    """The new notifications for the Web Notifications API, each handed out once: the tab that
    claims it shows it, other tabs of the same user get nothing."""
    shown = []
    for notification in _pushable(_listed(request)).select_related("job").order_by("pk"):
        claimed = Notification.objects.filter(pk=notification.pk, pushed=False)
        if claimed.update(pushed=True) != 1:
            continue  # another tab took it
        message = describe(notification)
        shown.append(
            {
                "id": notification.pk,
                "title": message.title,
                "body": message.body,
                "url": notification.job.get_absolute_url(),
            }
        )
    return JsonResponse({"notifications": shown})


@checks_nul_per_field
@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def notification_settings(request: HttpRequest) -> HttpResponse:
    form = DefaultsForm(
        request.POST if request.method == "POST" else None, instance=defaults_of(request.user)
    )
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "Saved: jobs without a choice of their own follow it.")
        return redirect("jobs:notification_settings")
    return render(request, "jobs/notification_settings.html", {"form": form})


@checks_nul_per_field
@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def job_notifications(request: HttpRequest, pk: int) -> HttpResponse:
    """A job's own choice, which starts as the owner's default (the form in the job page)."""
    job = get_object_or_404(Job, pk=pk, owner=request.user)
    own = JobNotificationChoice.objects.filter(job=job).first()
    initial = None if own else choice_for(job).values()
    form = JobChoiceForm(
        request.POST if request.method == "POST" else None, instance=own, initial=initial
    )
    saved = False
    if request.method == "POST" and form.is_valid():
        form.instance.job = job
        form.save()
        saved = True
        if not request.htmx:
            messages.success(request, "Saved this job's notifications.")
            return redirect(job)
    ctx = {"job": job, "form": form, "own": own is not None or saved, "saved": saved}
    template = "jobs/job_notifications.html"
    return render(request, f"{template}#choice" if request.htmx else template, ctx)
