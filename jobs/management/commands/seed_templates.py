"""Load the site templates the portal starts with, keeping admins' edits."""

from django.core.management.base import BaseCommand

from guidance.models import Cluster
from jobs.compose import site_templates
from jobs.models import SiteTemplate


class Command(BaseCommand):
    help = "Create the seeded site templates that are missing."

    def handle(self, *args, **options) -> None:
        created = 0
        for entry in site_templates.TEMPLATES:
            if not SiteTemplate.objects.filter(slug=entry["slug"]).exists():
                fields = {key: value for key, value in entry.items() if key != "clusters"}
                template = SiteTemplate(**fields)
                template._change_reason = "Loaded from the portal's seed templates"
                template.save()
                template.clusters.set(Cluster.objects.filter(slug__in=entry["clusters"]))
                created += 1
        self.stdout.write(f"Site templates: {created} created, the rest kept as is.")


def link_seeded_templates(cluster: Cluster) -> None:
    """A seeded cluster that came after the templates (the dev cluster) gets those written for
    it, as if it had been there when they were created."""
    templates = site_templates.TEMPLATES
    slugs = [entry["slug"] for entry in templates if cluster.slug in entry["clusters"]]
    for template in SiteTemplate.objects.filter(slug__in=slugs):
        template.clusters.add(cluster)
