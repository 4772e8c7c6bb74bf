"""Signal handlers that keep the access invariants whatever door changed the data.

- Built-in roles exist after every migrate (and after a test database flush, which re-emits
  post_migrate).
- A user created as a superuser (`createsuperuser`, `create_superuser`, a factory) holds `osmo-admin`:
  the superuser flag itself grants nothing, the role does.
- Built-in roles cannot be deleted, not even through their group; deleting a role deletes its group.
- Any change to roles, their holders, tokens, users or object permissions moves the access epoch on
  (`access.epoch`).
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connections
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_delete
from django.dispatch import receiver
from guardian.models import GroupObjectPermission, UserObjectPermission

from access import epoch
from access.models import APIToken, Role
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


# --- the access epoch -----------------------------------------------------------------------------
# Anything that changes what a principal may do moves the epoch on, in the same transaction, so the
# per-process caches of token lookups and role rules (access.epoch) are never used past a change.

_User = get_user_model()
# guardian's object permission rows too: they are object rights (access.policy.register_object_right)
_EPOCH_SENDERS = (Role, Group, APIToken, _User, UserObjectPermission, GroupObjectPermission)
_NOT_ACCESS = {"last_login"}  # a login's own save changes nothing that decides access


def bump_access_epoch(sender, update_fields=None, raw=False, **kwargs) -> None:
    if raw or (update_fields and set(update_fields) <= _NOT_ACCESS):
        return
    epoch.bump()


def bump_on_membership(sender, action, **kwargs) -> None:
    if action.startswith("post_"):
        epoch.bump()


for _sender in _EPOCH_SENDERS:
    post_save.connect(bump_access_epoch, sender=_sender, dispatch_uid=f"access-epoch-save-{_sender.__name__}")
    post_delete.connect(bump_access_epoch, sender=_sender, dispatch_uid=f"access-epoch-delete-{_sender.__name__}")
for _through in (_User.groups.through, APIToken.roles.through):
    m2m_changed.connect(bump_on_membership, sender=_through, dispatch_uid=f"access-epoch-m2m-{_through.__name__}")
