from django.apps import AppConfig


class ClustersConfig(AppConfig):
    name = "clusters"
    verbose_name = "Clusters"
    default_auto_field = "django.db.models.BigAutoField"
