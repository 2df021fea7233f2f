"""What users keep: compositions (a form's values and the script text), and admins' templates."""

from django.conf import settings
from django.db import models
from django.urls import reverse
from simple_history.models import HistoricalRecords


class SiteTemplate(models.Model):
    """A starting point admins publish, e.g. 'PyTorch training, one GPU'."""

    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    fields = models.JSONField(
        default=dict, help_text="The composer's field values, by field name (e.g. command)."
    )
    published = models.BooleanField(default=True)
    order = models.PositiveSmallIntegerField(default=100)
    history = HistoricalRecords()

    class Meta:
        ordering = ["order", "name"]

    def __str__(self) -> str:
        return self.name


class Composition(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="compositions"
    )
    name = models.CharField(max_length=100)
    fields = models.JSONField(default=dict)
    script = models.TextField()
    # The user changed the script by hand: it no longer follows the form's values.
    edited = models.BooleanField(default=False)
    is_template = models.BooleanField(
        "use as my template", default=False, help_text="Offer it when starting a new job."
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("jobs:composition", args=[self.pk])
