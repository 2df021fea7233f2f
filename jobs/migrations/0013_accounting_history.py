# Numbered 0013 for the merge: another change of issue #25 takes 0012; this one depends on
# 0011 until then.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0011_following"),
    ]

    operations = [
        migrations.AddField(
            model_name="clusteraccount",
            name="history_read_until",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.AddField(
            model_name="job",
            name="work_dir",
            field=models.CharField(blank=True, max_length=300),
        ),
    ]
