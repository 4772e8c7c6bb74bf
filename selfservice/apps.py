from django.apps import AppConfig


class SelfServiceConfig(AppConfig):
    name = "selfservice"
    verbose_name = "Requests"
    default_auto_field = "django.db.models.BigAutoField"
