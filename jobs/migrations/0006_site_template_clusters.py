from django.db import migrations, models

# The two templates seeded before templates had clusters load the Alliance sites' modules.
SEEDED_FOR_ALLIANCE = ("pytorch-training-1gpu", "inference")
ALLIANCE = ("beluga", "cedar", "graham", "narval")


def link_alliance_templates(apps, schema_editor) -> None:
    SiteTemplate = apps.get_model("jobs", "SiteTemplate")
    Cluster = apps.get_model("guidance", "Cluster")
    clusters = list(Cluster.objects.filter(slug__in=ALLIANCE))
    for template in SiteTemplate.objects.filter(slug__in=SEEDED_FOR_ALLIANCE):
        template.clusters.set(clusters)


class Migration(migrations.Migration):
    dependencies = [
        ("guidance", "0003_job_environment"),
        ("jobs", "0005_slurm_job_states"),
    ]

    operations = [
        migrations.AddField(
            model_name="sitetemplate",
            name="clusters",
            field=models.ManyToManyField(
                blank=True,
                help_text="The clusters it is written for (their modules, paths); none: every "
                "cluster.",
                related_name="site_templates",
                to="guidance.cluster",
            ),
        ),
        migrations.RunPython(link_alliance_templates, migrations.RunPython.noop),
    ]
