"""The audit trail: who did what, when, through which door and from where.

Recorded: every config write (a listener on `configs.revisions`, so every door is covered in
one place), role grants and revocations (manual and IdP sync), token creation and revocation, and
every request refused by `access.policy` on the API, the admin and the self-service pages.
Events are written in the caller's transaction: a write that rolls back leaves no event behind.
"""

from __future__ import annotations

from access.models import AuditEvent
from configs.revisions import Actor

SYSTEM = Actor(name="system", source="system")
SYSTEM_CLI = Actor(name="system", source="cli")


def client_address(request) -> str | None:
    """The peer address of a request. Behind a proxy this is the proxy (no forwarded header is trusted)."""
    if request is None:
        return None
    return request.META.get("REMOTE_ADDR") or None


def event(
    action: str, actor: Actor | None = None, *, target: str = "", outcome: str = "ok", detail: dict | None = None
) -> AuditEvent:
    """An unsaved event (see `record` and `record_all`)."""
    actor = actor or SYSTEM
    user = actor.user if actor.user is not None and actor.user.pk else None
    return AuditEvent(
        actor=user,
        actor_name=actor.name[:150],
        action=action[:64],
        target=target[:300],
        outcome=outcome,
        source=actor.source[:16],
        remote_addr=actor.remote_addr,
        detail=detail or {},
    )


def record(
    action: str, actor: Actor | None = None, *, target: str = "", outcome: str = "ok", detail: dict | None = None
) -> AuditEvent:
    audit = event(action, actor, target=target, outcome=outcome, detail=detail)
    audit.save()
    return audit


def record_all(events: list[AuditEvent]) -> None:
    if events:
        AuditEvent.objects.bulk_create(events)


def denied(request, who, action: str, resource: str, source: str, because: list[str]) -> AuditEvent:
    """A request refused by the policy (`who` is the principal that asked)."""
    user = who.user if who.user.is_authenticated else None
    actor = Actor(name=who.name, user=user, source=source, remote_addr=client_address(request))
    return record(
        "access.denied",
        actor,
        target=f"{action} on {resource or '(global)'}",
        outcome="denied",
        detail={"method": request.method, "path": request.get_full_path()[:500], "because": list(because)},
    )


def config_written(config_type: str, revisions: list, actor: Actor) -> None:
    """`configs.revisions` listener: one event per written object."""
    record_all(
        [
            event(
                "config.delete" if revision.deleted else "config.update",
                actor,
                target=f"{config_type} {revision.name}",
                detail={"config_type": config_type, "name": revision.name, "revision": revision.revision},
            )
            for revision in revisions
        ]
    )
