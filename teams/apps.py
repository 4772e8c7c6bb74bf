from django.apps import AppConfig


class TeamsConfig(AppConfig):
    name = "teams"
    verbose_name = "Teams"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from access import actions, policy
        from access.signals import bump_access_epoch
        from teams.models import Department, Project

        # Which project a submission is charged to is cached under the access epoch (teams.services).
        post_save.connect(bump_access_epoch, sender=Project, dispatch_uid="teams-project-saved-epoch")
        post_delete.connect(bump_access_epoch, sender=Project, dispatch_uid="teams-project-deleted-epoch")

        # A department's admins (guardian permission teams.manage_department on it) do, for that department
        # only, what a team admin does: see it (config:Read) and add projects to it (config:Update on the
        # department: `teams.services.create_project` decides with obj=department); and see its projects.
        # A project row has no update of its own (yet): its right is config:Read only.
        manage = "teams.manage_department"
        policy.register_object_right(Department, manage, (actions.CONFIG_READ, actions.CONFIG_UPDATE), label="admin")
        policy.register_object_right(Project, manage, (actions.CONFIG_READ,), via="department", label="admin")
