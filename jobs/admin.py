from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from jobs import models


@admin.register(models.SiteTemplate)
class SiteTemplateAdmin(SimpleHistoryAdmin):
    list_display = ["name", "slug", "published", "order"]
    prepopulated_fields = {"slug": ["name"]}
