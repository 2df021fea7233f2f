"""The admins' GPU usage page: who had which GPUs over a period, and how busy they kept them."""

from datetime import date, datetime, time, timedelta

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_safe

from guidance.forms import SlugChoiceField
from guidance.models import Cluster
from guidance.nul import checks_nul_per_field
from jobs.gpu.usage import Period, load, summarize

DEFAULT_DAYS = 7
MAX_DAYS = 366


class UsageForm(forms.Form):
    start = forms.DateField(
        label="From",
        widget=forms.DateInput(format="%Y-%m-%d", attrs={"type": "date"}),
        error_messages={"invalid": "Enter the first day as YYYY-MM-DD."},
    )
    end = forms.DateField(
        label="To",
        widget=forms.DateInput(format="%Y-%m-%d", attrs={"type": "date"}),
        help_text="Included.",
        error_messages={"invalid": "Enter the last day as YYYY-MM-DD."},
    )
    cluster = SlugChoiceField(
        queryset=Cluster.objects.order_by("name"),
        required=False,
        empty_label="All clusters",
        error_messages={"invalid_choice": "There is no cluster “%(value)s”: choose one."},
    )

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)

    def clean(self) -> dict:
        data = super().clean()
        start, end = data.get("start"), data.get("end")
        if start and end:
            if start > end:
                raise ValidationError("The first day comes after the last: swap them.")
            if (end - start).days >= MAX_DAYS:
                raise ValidationError(f"Choose at most {MAX_DAYS} days.")
            if start > timezone.localdate():
                raise ValidationError("The period starts in the future: no job ran in it yet.")
        return data

    def period(self, now: datetime) -> Period:
        # Whole days in the portal's time zone; today ends now.
        start = timezone.make_aware(datetime.combine(self.cleaned_data["start"], time.min))
        end = self.cleaned_data["end"] + timedelta(days=1)
        return Period(start, min(timezone.make_aware(datetime.combine(end, time.min)), now))


def _with_defaults(query: QueryDict, today: date) -> dict[str, str]:
    # An empty field means its default, so that the bare URL shows the last seven days.
    data = {"start": str(today - timedelta(days=DEFAULT_DAYS - 1)), "end": str(today)}
    data.update({key: value for key, value in query.items() if value.strip()})
    return data


@checks_nul_per_field
@login_required
@require_safe
def usage(request: HttpRequest) -> HttpResponse:
    if not request.user.is_staff:
        raise PermissionDenied
    form = UsageForm(_with_defaults(request.GET, timezone.localdate()))
    if not form.is_valid():
        ctx = {"form": form, "time_zone": timezone.get_current_timezone_name()}
        return render(request, "jobs/usage.html", ctx, status=400)
    now = timezone.now()
    period = form.period(now)
    cluster = form.cleaned_data["cluster"]
    report = summarize(
        load(period, cluster.pk if cluster else None, now), period, multi_cluster=cluster is None
    )
    ctx = {
        "form": form,
        "cluster": cluster,
        "report": report,
        # Admins look into a job through the admin: its own page is its owner's only.
        "wastes": [
            (waste, reverse("admin:jobs_job_change", args=[waste.job.pk]))
            for waste in report.top_waste
        ],
        "target": report.targets[0] if len(report.targets) == 1 else None,
        "time_zone": timezone.get_current_timezone_name(),
    }
    return render(request, "jobs/usage.html", ctx)
