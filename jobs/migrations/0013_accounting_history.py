
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0012_notifications"),
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
