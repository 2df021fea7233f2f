"""Load the site templates the portal starts with, keeping admins' edits."""

from django.core.management.base import BaseCommand

from jobs.compose import site_templates
from jobs.models import SiteTemplate


class Command(BaseCommand):
    help = "Create the seeded site templates that are missing."

    def handle(self, *args, **options) -> None:
        created = 0
        for entry in site_templates.TEMPLATES:
            if not SiteTemplate.objects.filter(slug=entry["slug"]).exists():
                template = SiteTemplate(**entry)
                template._change_reason = "Loaded from the portal's seed templates"
                template.save()
                created += 1
        self.stdout.write(f"Site templates: {created} created, the rest kept as is.")
