from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html
from simple_history.admin import SimpleHistoryAdmin

from guidance import article_values, models

SOURCE_FIELDS = ("Source", {"fields": ["source_document", "source_section", "note"]})


class GpuTypeInline(admin.TabularInline):
    model = models.GpuType
    extra = 0
    fields = ["name", "model", "memory_gb", "relative_speed", "expects_full_utilization"]
    show_change_link = True


class PartitionInline(admin.TabularInline):
    model = models.Partition
    extra = 0
    fields = [
        "name", "slurm_partition", "gpu_type", "gpus_per_node", "cpus_per_node",
        "memory_per_node_mb", "node_local_gb", "max_hours", "default_hours", "purpose",
    ]  # fmt: skip
    show_change_link = True


class StorageTierInline(admin.TabularInline):
    model = models.StorageTier
    extra = 0
    fields = ["name", "kind", "path", "quota_bytes", "quota_files", "persistent", "per_job"]
    show_change_link = True


class PolicyInline(admin.StackedInline):
    model = models.Policy
    can_delete = False
    show_change_link = True


class JobEnvironmentInline(admin.StackedInline):
    model = models.JobEnvironment
    can_delete = False
    show_change_link = True
    verbose_name = "job environment (what the site gives every job)"


class SiteRuleInline(admin.TabularInline):
    model = models.SiteRule
    extra = 0
    fields = ["rule", "source_document", "source_section"]
    verbose_name = "rule for job scripts (the script checker applies it here)"


class CodeRuleSettingInline(admin.TabularInline):
    model = models.CodeRuleSetting
    extra = 0
    fields = ["rule", "enabled", "wording", "source_document", "source_section"]
    verbose_name = "rule for training code (only those switched off, reworded or re-sourced)"
    verbose_name_plural = "rules for training code: settings on this cluster"


@admin.register(models.Cluster)
class ClusterAdmin(SimpleHistoryAdmin):
    list_display = ["name", "slug", "scheduler", "login_host"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    readonly_fields = ["host_key_fingerprint", "host_key_link", "import_link"]
    fieldsets = [
        (None, {"fields": ["name", "slug", "scheduler", "description"]}),
        (
            "Login",
            {
                "fields": [
                    "login_host",
                    "login_port",
                    "automation_host",
                    "automation_port",
                    "host_key_fingerprint",
                    "host_key_link",
                    "import_link",
                ]
            },
        ),
        SOURCE_FIELDS,
    ]
    inlines = [
        PolicyInline,
        JobEnvironmentInline,
        GpuTypeInline,
        PartitionInline,
        StorageTierInline,
        SiteRuleInline,
        CodeRuleSettingInline,
    ]

    def save_related(self, request, form, formsets, change) -> None:
        super().save_related(request, form, formsets, change)
        # A cluster left without one (a new one, or one from before job environments) gets its
        # scheduler's default, which says what to add.
        if models.JobEnvironment.default_for(form.instance):
            self.message_user(
                request,
                "It has the default job environment of a Slurm cluster (no variables but Slurm's, "
                "no module command): add what its jobs get under 'Job environment'.",
            )

    @admin.display(description="Host key")
    def host_key_link(self, obj: models.Cluster) -> str:
        if not obj.pk:
            return "Save the cluster first."
        return format_html(
            '<a href="{}">Fetch the login host\'s key to check and pin it</a>',
            reverse("cluster_host_key", args=[obj.pk]),
        )

    @admin.display(description="Partitions")
    def import_link(self, obj: models.Cluster) -> str:
        if not obj.pk or not obj.host_key:
            return "Pin the host key first; then partitions can be read from Slurm."
        return format_html(
            '<a href="{}">Import partitions and GPU types from Slurm</a> (shows them first)',
            reverse("cluster_import_partitions", args=[obj.pk]),
        )


@admin.register(models.GpuType)
class GpuTypeAdmin(SimpleHistoryAdmin):
    list_display = ["name", "cluster", "model", "memory_gb", "expects_full_utilization"]
    list_filter = ["cluster"]


@admin.register(models.Partition)
class PartitionAdmin(SimpleHistoryAdmin):
    list_display = ["name", "cluster", "gpu_type", "gpus_per_node", "max_hours", "purpose"]
    list_filter = ["cluster", "purpose"]


@admin.register(models.StorageTier)
class StorageTierAdmin(SimpleHistoryAdmin):
    list_display = ["name", "cluster", "kind", "path", "quota_bytes", "quota_files"]
    list_filter = ["cluster", "kind"]


@admin.register(models.Policy)
class PolicyAdmin(SimpleHistoryAdmin):
    list_display = ["cluster", "in_memory_limit_gb", "node_local_limit_gb", "cpus_per_gpu"]


@admin.register(models.JobEnvironment)
class JobEnvironmentAdmin(SimpleHistoryAdmin):
    list_display = ["cluster", "modules", "python_module", "python_builder"]


@admin.register(models.SiteRule)
class SiteRuleAdmin(SimpleHistoryAdmin):
    list_display = ["cluster", "rule", "source_document", "source_section"]
    list_filter = ["cluster", "rule"]


@admin.register(models.CodeRuleSetting)
class CodeRuleSettingAdmin(SimpleHistoryAdmin):
    list_display = ["cluster", "rule", "enabled", "source_document", "source_section"]
    list_filter = ["cluster", "rule", "enabled"]
    fieldsets = [(None, {"fields": ["cluster", "rule", "enabled", "wording"]}), SOURCE_FIELDS]


@admin.register(models.Article)
class ArticleAdmin(SimpleHistoryAdmin):
    list_display = ["title", "published", "order", "updated"]
    list_filter = ["published", "clusters"]
    prepopulated_fields = {"slug": ["title"]}
    filter_horizontal = ["clusters"]

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        # Which placeholders exist, where the admin writes them.
        if db_field.name == "body":
            field.help_text = article_values.help_text()
        elif db_field.name == "title":
            field.help_text = "May hold the body's placeholders, e.g. {{ policy.cpus_per_gpu }}."
        return field
