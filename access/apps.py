from django.apps import AppConfig
from django.db.models.signals import post_migrate


class AccessConfig(AppConfig):
    name = "access"
    verbose_name = "Access"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from axes.signals import user_locked_out

        from access import signals, throttle
        from access.config_types import CONFIG_TYPES
        from access.services import audit
        from configs import registry, revisions

        registry.register(*CONFIG_TYPES)  # ROLE
        if audit.config_written not in revisions.LISTENERS:
            revisions.LISTENERS.append(audit.config_written)
        post_migrate.connect(signals.ensure_roles_after_migrate, sender=self, dispatch_uid="access-builtin-roles")
        user_locked_out.connect(throttle.audit_lockout, dispatch_uid="access-audit-lockout")
