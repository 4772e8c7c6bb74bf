"""Signal handlers that keep the access invariants whatever door changed the data.

- Built-in roles exist after every migrate (and after a test database flush, which re-emits
  post_migrate).
- A user created as a superuser (`createsuperuser`, `create_superuser`, a factory) holds `osmo-admin`:
  the superuser flag itself grants nothing, the role does.
- Built-in roles cannot be deleted, not even through their group; deleting a role deletes its group.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connections
from django.db.models.signals import post_delete, post_save, pre_delete
from django.dispatch import receiver

from access.models import Role
from access.policy import ADMIN_ROLE
from access.services import roles


def ensure_roles_after_migrate(sender, using="default", **kwargs) -> None:
    if Role._meta.db_table in connections[using].introspection.table_names():
        roles.ensure_builtin_roles()


@receiver(post_save, sender=get_user_model(), dispatch_uid="access-superuser-is-osmo-admin")
def superuser_holds_osmo_admin(sender, instance, created, raw=False, **kwargs) -> None:
    if created and instance.is_superuser and not raw:
        roles.ensure_builtin_roles()
        roles.update_user_roles(instance, add=[ADMIN_ROLE])


@receiver(pre_delete, sender=Role, dispatch_uid="access-builtin-roles-stay")
def builtin_roles_stay(sender, instance, **kwargs) -> None:
    roles.check_deletable(instance)


@receiver(post_delete, sender=Role, dispatch_uid="access-role-group-goes")
def role_group_goes(sender, instance, origin=None, **kwargs) -> None:
    if not isinstance(origin, Group):
        Group.objects.filter(pk=instance.group_id).delete()
