from django.apps import AppConfig
from django.db.models.signals import post_migrate


class AccessConfig(AppConfig):
    name = "access"
    verbose_name = "Access"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from axes.signals import user_locked_out

        from access import signals
        from configs import registry, revisions
        from portal import lazy

        registry.register("ROLE", "access.config_types.RoleHandler")
        listener = lazy.function("access.services.audit.config_written")
        if listener not in revisions.LISTENERS:
            revisions.LISTENERS.append(listener)
        post_migrate.connect(signals.ensure_roles_after_migrate, sender=self, dispatch_uid="access-builtin-roles")
        lazy.connect(user_locked_out, "access.throttle.audit_lockout", dispatch_uid="access-audit-lockout")
