from django.apps import AppConfig


class TeamsConfig(AppConfig):
    name = "teams"
    verbose_name = "Teams"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from access import actions, policy
        from teams.models import Department, Project

        # A department's admins (guardian permission teams.manage_department on it) do, for that department
        # only, what a team admin does: see it (config:Read) and add projects to it (config:Update on the
        # department: `teams.services.create_project` decides with obj=department); and see its projects.
        # A project row has no update of its own (yet): its right is config:Read only.
        manage = "teams.manage_department"
        policy.register_object_right(Department, manage, (actions.CONFIG_READ, actions.CONFIG_UPDATE), label="admin")
        policy.register_object_right(Project, manage, (actions.CONFIG_READ,), via="department", label="admin")
