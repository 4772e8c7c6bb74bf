"""Create the built-in roles (osmo-admin, osmo-user, osmo-default), each with its group.

A frozen copy of access.documents.BUILTIN_ROLES as of this migration; `access.signals` re-creates any
that go missing after later migrates. Existing roles of the same name are left alone.
"""

from django.db import migrations

ROLES = {
    "osmo-admin": ("Administrators: every action on everything (built in, immutable).",
                   [{"effect": "Allow", "actions": ["*:*"], "resources": ["*"]}], True),
    "osmo-user": ("Users: list pools and resources, read workflows, manage their profile, tokens and apps.",
                  [{"effect": "Allow", "resources": ["*"],
                    "actions": ["app:*", "auth:Token", "credentials:*", "mcp:Access", "pool:List", "profile:Read",
                                "profile:Update", "resources:Read", "user:List", "workflow:List",
                                "workflow:Read"]},
                   {"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/default"]}], False),
    "osmo-default": ("Held implicitly by everyone, signed in or not.",
                     [{"effect": "Allow", "resources": ["*"],
                       "actions": ["system:Health", "system:Version", "auth:Login", "auth:Refresh", "profile:*"]}],
                     False),
}


def create_roles(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Role = apps.get_model("access", "Role")
    for name, (description, policies, immutable) in ROLES.items():
        if Role.objects.filter(name=name).exists():
            continue
        group, _ = Group.objects.get_or_create(name=name)
        Role.objects.create(group=group, name=name, description=description, policies=policies,
                            immutable=immutable, sync_mode="import", external_roles=[])


def remove_roles(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Group.objects.filter(name__in=list(ROLES), role__isnull=False).delete()


class Migration(migrations.Migration):

    dependencies = [
        ("access", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(create_roles, remove_roles),
    ]
