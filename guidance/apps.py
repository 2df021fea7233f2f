from django.apps import AppConfig


class GuidanceConfig(AppConfig):
    name = "guidance"
    verbose_name = "Cluster guidance"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from guidance import published

        published.connect_signals()
