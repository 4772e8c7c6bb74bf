"""How the rows of a model name their policy resources, declared on the model (pure: no Django import).

`access.policy.restrict(queryset, who, action)` and object decisions (`decide(..., obj=row)`) read the
model's `policy_resources` attribute; access itself knows no model of the apps above it. Example:

    class Workflow(models.Model):
        policy_resources = PolicyResources(Scope("pool", field="pool__name"), owner="submitted_by",
                                           owner_actions=(actions.WORKFLOW_LIST, actions.WORKFLOW_READ))

An action's resource kind comes from `access.actions.resource_kind` (`workflow:List` → `pool`), and the
model's scope of that kind says where a row's name is: a field (`pool__name`: the row is resource
`pool/<its pool's name>`) or a fixed name (`Scope("config", fixed="pool")`: every row is `config/pool`).
`lists=True` marks the model whose rows *are* the resources of that kind (Pool for `pool`), so
`policy.allowed_names(who, "pool")` can list them without access importing it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scope:
    kind: str  # the resource type: "pool", "config", …
    field: str = ""  # field path holding the name ("name", "pool__name", "config_type")
    fixed: str = ""  # or: every row is `<kind>/<fixed>`
    lower: bool = False  # the field holds the name in another case (config types: POOL → config/pool)
    lists: bool = False  # the model's rows are the resources of this kind (one row per name)

    def __post_init__(self) -> None:
        if bool(self.field) == bool(self.fixed):
            raise ValueError(f"scope {self.kind}: give exactly one of field= and fixed=")

    def name_of(self, obj) -> str:
        if self.fixed:
            return self.fixed
        value = obj
        for part in self.field.split("__"):
            value = getattr(value, part)
        return str(value).lower() if self.lower else str(value)

    def resource_of(self, obj) -> str:
        return f"{self.kind}/{self.name_of(obj)}"


class PolicyResources:
    """A model's resource scopes, plus who owns a row (`owner`: a user FK) and what an owner may do to it
    whatever their roles (their own workflows: list, read, cancel)."""

    def __init__(self, *scopes: Scope, owner: str = "", owner_actions: tuple[str, ...] = ()) -> None:
        self.scopes = {scope.kind: scope for scope in scopes}
        self.owner = owner
        self.owner_actions = frozenset(owner_actions)

    def scope(self, kind: str, model=None) -> Scope:
        scope = self.scopes.get(kind)
        if scope is None:
            raise LookupError(
                f"{getattr(model, '__name__', model)} declares no {kind!r} resources "
                f"(it has {', '.join(self.scopes) or 'none'})"
            )
        return scope

    def owned_by(self, obj, user) -> bool:
        return bool(self.owner) and user.is_authenticated and getattr(obj, f"{self.owner}_id", None) == user.pk
