from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from jobs import models


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
