"""A user's credentials (`osmo credential set|list|delete`, `/api/credentials`): OSMO's three types, stored
encrypted, never shown back, audited (docs/credentials.md).

The request bodies are OSMO's `CredentialOptions` (NVIDIA/OSMO src/service/core/workflow/objects.py): exactly
one of `registry_credential` {registry, username, auth}, `data_credential` {endpoint, access_key_id,
access_key, region, override_url} and `generic_credential` {credential: {key: value}}; unknown fields are
refused. As in OSMO, a REGISTRY (or DATA) credential is keyed by its registry (endpoint) too: setting one for
a registry that another of the user's credentials holds replaces that one (OSMO's `ON CONFLICT (user_name,
profile)`). OSMO also logs in to the registry (or data endpoint) before saving; the portal does not (it has no
route out to them): a wrong secret shows when the image is pulled.

Only the owner reads or uses a credential: every query here is by owner, and the doors ask `access.policy`
(`credentials:Read|Update|Delete` on `credentials/<username>`). Values leave this module only through
`secret_values`, which the workflow's pod Secrets are built from.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction

from access.models import Credential, CredentialType
from access.services import audit
from configs.revisions import Actor
from portal.errors import DomainError, NotFound
from portal.secrets import is_unreadable

# OSMO's CREDNAMEREGEX (src/lib/utils/credentials.py), bounded: the name is part of Secret keys.
NAME_RE = re.compile(r"^[a-zA-Z]([a-zA-Z0-9_-]*[a-zA-Z0-9])?$")
NAME_MAX = 63
KEY_RE = re.compile(r"^[-._a-zA-Z0-9]+$")  # a Kubernetes Secret data key (it becomes a file name)
KEY_MAX = 253
MAX_KEYS = 64
VALUE_MAX = 65536  # characters of one value
PAYLOAD_MAX = 262144  # characters of all the values of one credential
MAX_PER_USER = 100
HOST_MAX = 253
DOCKER_HUB = "docker.io"
_DOCKER_HUB_ALIASES = {"index.docker.io", "registry-1.docker.io", "registry.hub.docker.com", "docker.io"}
_FIELDS = {
    "registry_credential": ({"auth"}, {"registry", "username"}),
    "data_credential": ({"endpoint", "access_key_id", "access_key"}, {"region", "override_url"}),
    "generic_credential": ({"credential"}, set()),
}
_TYPE_OF = {
    "registry_credential": CredentialType.REGISTRY,
    "data_credential": CredentialType.DATA,
    "generic_credential": CredentialType.GENERIC,
}


class CredentialInvalid(DomainError):
    code = "invalid_credential"


class CredentialNotFound(NotFound):
    pass


@dataclass
class Parsed:
    cred_type: str
    profile: str
    values: dict[str, str]


def check_name(name: object, field: str = "name") -> str:
    if not isinstance(name, str) or not NAME_RE.match(name) or len(name) > NAME_MAX:
        raise CredentialInvalid(
            f"a credential name has 1 to {NAME_MAX} letters, digits, '-' and '_', starts with a letter and does "
            "not end with '-' or '_'",
            field=field,
            value=name,
        )
    return name


def registry_host(value: str) -> str:
    """A registry as written (`https://nvcr.io/v2/`, `nvcr.io`, ``) → its host, as images name it."""
    host = re.sub(r"^[a-z]+://", "", value.strip().lower()).split("/", 1)[0]
    return DOCKER_HUB if not host or host in _DOCKER_HUB_ALIASES else host


def image_registry(image: str) -> str:
    """The registry host of an image reference (docker.io when the first part is no host), as the runtime reads it."""
    first, slash, _ = image.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        return registry_host(first)
    return DOCKER_HUB


def parse(body: object) -> Parsed:
    """OSMO's `CredentialOptions` body → type, profile and the values to store; refusals name the field."""
    if not isinstance(body, dict):
        raise CredentialInvalid("the body is an object with one of " + ", ".join(_FIELDS), field="", value=body)
    given = [key for key, value in body.items() if value is not None]
    unknown = [key for key in given if key not in _FIELDS]
    if unknown:
        raise CredentialInvalid(f"unknown field; one of {', '.join(_FIELDS)}", field=unknown[0], value=unknown[0])
    if len(given) != 1:
        raise CredentialInvalid(
            f"Exactly one of the following must be set: {', '.join(_FIELDS)}", field="", value=given or None
        )
    kind = given[0]
    fields = _fields(body[kind], kind)
    if kind == "generic_credential":
        values = _values(fields["credential"], f"{kind}.credential")
        return Parsed(CredentialType.GENERIC, "", values)
    if kind == "registry_credential":
        host = registry_host(_text(fields.get("registry", ""), f"{kind}.registry", HOST_MAX, empty=True))
        values = {"username": fields.get("username", ""), "auth": fields["auth"]}
        for key, value in values.items():
            _text(value, f"{kind}.{key}", VALUE_MAX, empty=key == "username")
        return Parsed(CredentialType.REGISTRY, host, values)
    endpoint = _text(fields["endpoint"], f"{kind}.endpoint", 2048).rstrip("/")
    values = {key: _text(fields[key], f"{kind}.{key}", VALUE_MAX) for key in ("access_key_id", "access_key")}
    values["region"] = _text(fields.get("region") or "us-east-1", f"{kind}.region", 64)
    if fields.get("override_url"):
        values["override_url"] = _text(fields["override_url"], f"{kind}.override_url", 2048)
    return Parsed(CredentialType.DATA, endpoint, values)


def _fields(data: object, kind: str) -> dict:
    required, optional = _FIELDS[kind]
    if not isinstance(data, dict):
        raise CredentialInvalid("must be an object", field=kind, value=data)
    for key in data:
        if key not in required | optional:
            raise CredentialInvalid(
                f"extra fields not permitted; {kind} takes {', '.join(sorted(required | optional))}",
                field=f"{kind}.{key}",
                value=key,
            )
    for key in sorted(required):
        if data.get(key) in (None, ""):
            raise CredentialInvalid("is required", field=f"{kind}.{key}", value=data.get(key))
    return data


def _text(value: object, field: str, limit: int, *, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise CredentialInvalid("must be a string", field=field, value=value)
    if not value and not empty:
        raise CredentialInvalid("must not be empty", field=field, value=value)
    if len(value) > limit:
        raise CredentialInvalid(f"is {len(value)} characters long; at most {limit}", field=field, value=None)
    return value


def _values(data: object, field: str) -> dict[str, str]:
    if not isinstance(data, dict) or not data:
        raise CredentialInvalid("must be a non-empty object of key: value", field=field, value=data)
    if len(data) > MAX_KEYS:
        raise CredentialInvalid(f"has {len(data)} keys; at most {MAX_KEYS}", field=field, value=len(data))
    values = {}
    for key, value in data.items():
        if not isinstance(key, str) or not KEY_RE.match(key) or len(key) > KEY_MAX:
            raise CredentialInvalid(
                f"a key has 1 to {KEY_MAX} letters, digits, '-', '_' and '.' (it becomes a file name)",
                field=f"{field}.{key}",
                value=key,
            )
        values[key] = _text(value, f"{field}.{key}", VALUE_MAX)
    total = sum(len(value) for value in values.values())
    if total > PAYLOAD_MAX:
        raise CredentialInvalid(f"its values hold {total} characters; at most {PAYLOAD_MAX}", field=field, value=None)
    return values


def set_credential(owner, name: str, body: object, actor: Actor | None = None) -> Credential:
    """Create or replace `owner`'s credential `name`; another of theirs for the same registry (endpoint) goes."""
    check_name(name)
    parsed = parse(body)
    with transaction.atomic():
        # One writer per user at a time: two first saves of one name would otherwise race to the unique index.
        get_user_model().objects.select_for_update().filter(pk=owner.pk).first()
        mine = Credential.objects.filter(user=owner)
        existing = mine.filter(name=name).first()
        same_target = mine.none()
        if parsed.profile:  # OSMO keys REGISTRY and DATA credentials by their registry (endpoint) too
            same_target = mine.filter(cred_type=parsed.cred_type, profile=parsed.profile).exclude(name=name)
        replaced = list(same_target.values_list("name", flat=True))
        if existing is None and not replaced and mine.count() >= MAX_PER_USER:
            raise CredentialInvalid(
                f"you have {MAX_PER_USER} credentials, the most a user may have: delete one first",
                field="name",
                value=name,
            )
        same_target.delete()
        credential = existing or Credential(user=owner, name=name)
        credential.cred_type, credential.profile = parsed.cred_type, parsed.profile
        credential.keys = sorted(parsed.values)
        credential.payload = json.dumps(parsed.values)
        credential.save()
        detail = {"name": name, "type": parsed.cred_type, "keys": credential.keys}
        if replaced:
            detail["replaced"] = replaced
        audit.record("credential.set", actor or audit.SYSTEM, target=_target(owner), detail=detail)
    return credential


def credentials_of(owner) -> list[Credential]:
    """OSMO's order: by type descending (REGISTRY, GENERIC, DATA), then name."""
    return list(Credential.objects.filter(user=owner).order_by("-cred_type", "name"))


def get(owner, name: str) -> Credential:
    credential = Credential.objects.filter(user=owner, name=name).first()
    if credential is None:
        raise CredentialNotFound(f"Credential {name} does not exist", field="name", value=name)
    return credential


def delete(owner, name: str, actor: Actor | None = None) -> Credential:
    check_name(name)
    with transaction.atomic():
        credential = get(owner, name)
        credential.delete()
        audit.record(
            "credential.delete",
            actor or audit.SYSTEM,
            target=_target(owner),
            detail={"name": name, "type": credential.cred_type},
        )
    return credential


def describe(credential: Credential) -> dict:
    """OSMO's row (`cred_name`, `cred_type`, `profile`) and the key names; never a value."""
    return {
        "cred_name": credential.name,
        "cred_type": credential.cred_type,
        "profile": credential.profile or None,
        "keys": list(credential.keys),
    }


def secret_values(credential: Credential) -> dict[str, str]:
    """The stored values (decrypted): only for the Secrets of the owner's own workflows. Raises CredentialInvalid
    when no configured key opens them (FIELD_ENCRYPTION_KEYS changed)."""
    if is_unreadable(credential.payload):
        raise CredentialInvalid(
            f"the values of credential {credential.name} cannot be read: no FIELD_ENCRYPTION_KEYS key opens them "
            "(restore the key, or set the credential again)",
            field="FIELD_ENCRYPTION_KEYS",
            value=credential.name,
        )
    return json.loads(credential.payload)


def reencrypt() -> tuple[int, list[str]]:
    """Write every credential again with the first key (after a key rotation; `manage.py backend reencrypt`).
    Returns the count written and `user/name` of those no configured key opens (left untouched)."""
    count, unreadable = 0, []
    with transaction.atomic():
        for credential in Credential.objects.select_related("user").select_for_update(of=("self",)):
            if is_unreadable(credential.payload):
                unreadable.append(f"{credential.user.get_username()}/{credential.name}")
                continue
            credential.save(update_fields=["payload"])
            count += 1
    return count, unreadable


def _target(owner) -> str:
    return f"user/{owner.get_username()}"
