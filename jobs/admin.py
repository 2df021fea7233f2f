import logging

from django import forms
from django.conf import settings
from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from jobs import models
from jobs.cluster import keys

logger = logging.getLogger(__name__)


@admin.register(models.SiteTemplate)
class SiteTemplateAdmin(SimpleHistoryAdmin):
    list_display = ["name", "slug", "for_clusters", "published", "order"]
    list_filter = ["clusters", "published"]
    prepopulated_fields = {"slug": ["name"]}
    filter_horizontal = ["clusters"]

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("clusters")

    @admin.display(description="Clusters")
    def for_clusters(self, obj: models.SiteTemplate) -> str:
        return ", ".join(c.name for c in obj.clusters.all()) or "every cluster"


class GpuDeviceInline(admin.TabularInline):
    model = models.GpuDevice
    extra = 0
    can_delete = False
    fields = ["task_id", "node", "index", "name", "mig", "mean_utilization", "peak_memory_mb"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(models.Job)
class JobAdmin(admin.ModelAdmin):
    """For admins to look into a job (the usage page links here); jobs change only by polling."""

    list_display = [
        "name", "slurm_id", "owner", "state", "partition", "gpus", "gpu_utilization", "created",
    ]  # fmt: skip
    list_filter = ["state", "account__cluster", "partition", "gpu_type"]
    search_fields = ["name", "slurm_id", "owner__username"]
    date_hierarchy = "created"
    inlines = [GpuDeviceInline]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(models.Notification)
class NotificationAdmin(admin.ModelAdmin):
    """For admins to see what users were told and whether its e-mail went out; the poll makes
    them, so they are not added or changed by hand."""

    list_display = ["job", "owner", "event", "state", "email_status", "read", "created"]
    list_filter = ["event", "email_status"]
    search_fields = ["job__name", "job__slurm_id", "owner__username"]
    date_hierarchy = "created"

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class SecretTextarea(forms.Textarea):
    """A text area that never shows what it holds: a form sent back with an error comes back
    empty, not with the private key pasted into it."""

    def format_value(self, value) -> None:
        return None


class ClusterReaderForm(forms.ModelForm):
    private_key = forms.CharField(
        label="Private key",
        required=False,
        widget=SecretTextarea(attrs={"rows": 4, "autocomplete": "off", "spellcheck": "false"}),
        help_text="Only if the site gave you the service login's key: paste it (unencrypted "
        "OpenSSH or PEM) and it is stored encrypted, never shown again. Leave it blank for a key "
        "pair the portal makes.",
    )
    new_key = forms.BooleanField(
        label="Make a new key pair",
        required=False,
        help_text="Replaces the key: add the new public key on the cluster, remove the old one.",
    )

    class Meta:
        model = models.ClusterReader
        fields = ["cluster", "username", "enabled"]

    def clean_private_key(self) -> keys.KeyPair | None:
        text = self.cleaned_data["private_key"]
        if not text:
            return None
        try:
            return keys.pair_of(text, comment="gpu-portal-reader")
        except ValueError:
            raise forms.ValidationError(
                "Not an unencrypted private key in OpenSSH or PEM form."
            ) from None


@admin.register(models.ClusterReader)
class ClusterReaderAdmin(admin.ModelAdmin):
    """A cluster's read-only service login: the portal makes its key pair (or takes the one
    pasted), keeps the private half encrypted and shows only the public half, as the line to add
    to the login's ~/.ssh/authorized_keys."""

    form = ClusterReaderForm
    list_display = ["cluster", "username", "enabled", "reading_until"]
    list_filter = ["enabled"]
    readonly_fields = ["authorized_keys"]

    def get_fields(self, request, obj=None) -> list[str]:
        fields = ["cluster", "username", "enabled", "private_key"]
        return [*fields, "new_key", "authorized_keys"] if obj else fields

    @admin.display(description="Add to ~/.ssh/authorized_keys of the login")
    def authorized_keys(self, obj: models.ClusterReader) -> str:
        if not obj.public_key:
            return ""
        try:
            return keys.authorized_keys_line(obj.public_key, from_hosts=settings.PORTAL_SSH_FROM)
        except ValueError:
            logger.error("PORTAL_SSH_FROM is not a list of addresses: key lines go without from=")
            return keys.authorized_keys_line(obj.public_key)

    def save_model(self, request, obj: models.ClusterReader, form, change: bool) -> None:
        pair = form.cleaned_data.get("private_key")
        if pair is None and (not change or form.cleaned_data.get("new_key")):
            pair = keys.generate_keypair(comment="gpu-portal-reader")
        if pair is not None:
            obj.public_key = pair.public_line
            obj.private_key_encrypted = keys.encrypt(pair.private_pem)
        super().save_model(request, obj, form, change)
