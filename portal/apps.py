from django.apps import AppConfig
from django.contrib import admin
from django.contrib.admin.apps import SimpleAdminConfig
from django.contrib.admin.checks import check_admin_app, check_dependencies
from django.core import checks


class PortalConfig(AppConfig):
    default = True  # "portal" in INSTALLED_APPS is this one, not AdminConfig below
    name = "portal"
    verbose_name = "Portal"

    def ready(self):
        from django.conf import settings
        from django.core.signals import request_finished

        from portal import gc_tuning

        gc_tuning.tune(settings.GC_YOUNG_THRESHOLD)
        request_finished.connect(gc_tuning.after_work, dispatch_uid="portal-gc-settle")


class AdminConfig(SimpleAdminConfig):
    """`django.contrib.admin`, with the ModelAdmins loaded on first need (the URLconf, the admin checks).

    Django's own AdminConfig imports every app's admin module at start-up, and with them Unfold's admin
    stack, DRF's template tags and the policy admin site: a third of a CLI call's start-up
    (`manage.py pool list`), which never uses any of them.
    """

    def ready(self):
        checks.register(check_dependencies, checks.Tags.admin)
        checks.register(check_loaded_admin, checks.Tags.admin)


def load_admin() -> None:
    """Register every app's ModelAdmins on the policy admin site (idempotent). `portal.urls` calls it."""
    from access.admin.site import install_policy_admin_site  # the admin stack, imported here and only here
    from portal import unfold_headers

    install_policy_admin_site()
    unfold_headers.install()
    admin.autodiscover()


def check_loaded_admin(app_configs, **kwargs):
    load_admin()  # checks run in no set order: the URL check may not have loaded the admin yet
    return check_admin_app(app_configs, **kwargs)
