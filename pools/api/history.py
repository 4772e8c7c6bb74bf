"""Config history on OSMO's paths and in its shapes: `GET /api/configs/history`, rollback, diff, and a past
revision's deletion and tags. A revision here is a change of a whole config type (`POOL:7`, configs.changes);
with `name`, rollback and diff work on that object's own revisions (the portal's finer history)."""

from __future__ import annotations

from collections import defaultdict

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from access import actions, policy
from configs import changes, revisions, store
from configs.models import Change
from pools.api import osmo_shapes
from pools.api import serializers as s
from pools.api.views import ERRORS, ConfigAPIView, actor_of, path_type, valid
from portal.api import MAX_INT, APIRefusal, checked_int, osmo_time
from portal.errors import PermissionDenied

REVISION = OpenApiParameter(
    "revision", {"type": "integer", "minimum": 1, "maximum": MAX_INT}, OpenApiParameter.PATH, description="A revision"
)


def entry(change: Change) -> dict:
    """One history entry: OSMO's fields, then the portal's (`source`, the object revisions it wrote)."""
    return {
        "config_type": change.config_type,
        "name": change.name,
        "revision": change.revision,
        "username": change.username,
        "created_at": osmo_time(change.created_at),
        "description": change.description,
        "tags": list(change.tags),
        "data": None,
        "source": change.source,
        "objects": [
            {"name": row.name, "revision": row.revision, "deleted": row.deleted}
            for row in sorted(change.revisions.all(), key=lambda row: row.name)
        ],
    }


def with_data(rows: list[Change]) -> list[dict]:
    """Entries with `data`, the whole type at each change: one replay per config type in the page."""
    wanted = defaultdict(set)
    for row in rows:
        wanted[row.config_type].add(row.revision)
    states = {kind: changes.states(kind, numbers) for kind, numbers in wanted.items()}
    entries = []
    for row in rows:
        item = entry(row)
        item["data"] = osmo_shapes.history_data(row.config_type, states[row.config_type][row.revision])
        entries.append(item)
    return entries


class HistoryView(ConfigAPIView):
    def check_permissions(self, request):
        super().check_permissions(request)  # the last `config_types` (or `history` with none)
        for kind in request.query_params.getlist("config_types")[:-1]:  # each other type asked for
            try:
                policy.require(request, actions.CONFIG_READ, actions.config(str(kind).lower()))
            except PermissionDenied as refusal:
                raise APIRefusal(refusal) from None

    @extend_schema(
        parameters=[s.HistoryQuerySerializer],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        summary="Changes of config types (OSMO's history): the newest `limit`, oldest first unless order=DESC",
    )
    def get(self, request):
        query = valid(s.HistoryQuerySerializer, request.query_params)
        omit_data = query.pop("omit_data")
        rows = changes.history(changes.HistoryQuery(**query))
        return Response({"configs": [entry(row) for row in rows] if omit_data else with_data(rows)})


class DiffView(ConfigAPIView):
    @extend_schema(
        parameters=[s.DiffQuerySerializer],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        summary="Two revisions of a config type (`first_data`, `second_data`), or of one object with `name`",
    )
    def get(self, request):
        query = valid(s.DiffQuerySerializer, request.query_params)
        kind, first, second = query["config_type"], query["first_revision"], query["second_revision"]
        if "name" in query:
            return Response(revisions.diff(kind, query["name"], first, second).as_dict())
        changes.get(kind, first), changes.get(kind, second)
        states = changes.states(kind, [first, second])
        return Response(
            {
                "config_type": kind,
                "first_revision": first,
                "second_revision": second,
                "first_data": osmo_shapes.history_data(kind, states[first]),
                "second_data": osmo_shapes.history_data(kind, states[second]),
            }
        )


class RollbackView(ConfigAPIView):
    @extend_schema(
        request=s.RollbackSerializer,
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        summary="Restore a config type (or, with `name`, one object) to a revision, as a new revision",
    )
    def post(self, request):
        data = valid(s.RollbackSerializer, request.data)
        kind, number, actor = data["config_type"], data["revision"], actor_of(request)
        if "name" in data:
            result = store.rollback(
                kind, data["name"], number, actor, description=data["description"], tags=data["tags"]
            )
            return Response(result.as_dict())
        return Response(store.restore(kind, number, actor, description=data["description"], tags=data["tags"]))


class RevisionView(ConfigAPIView):
    @extend_schema(
        parameters=[REVISION],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        summary="Remove a past revision from the history list (OSMO's `config delete TYPE:N`)",
    )
    def delete(self, request, config_type, revision):
        revision = checked_int(revision, "revision", 1, MAX_INT)  # the path's digits: any number of them
        found = changes.hide(path_type(config_type), revision, actor_of(request).name)
        return Response({"config_type": found.config_type, "revision": found.revision, "deleted": True})


class RevisionTagsView(ConfigAPIView):
    @extend_schema(
        parameters=[REVISION],
        request=s.TagsSerializer,
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        summary="Add and remove tags of a revision (OSMO's `config tag`)",
    )
    def post(self, request, config_type, revision):
        revision = checked_int(revision, "revision", 1, MAX_INT)
        data = valid(s.TagsSerializer, request.data)
        found = changes.retag(path_type(config_type), revision, data.get("set_tags", []), data.get("delete_tags", []))
        return Response({"config_type": found.config_type, "revision": found.revision, "tags": found.tags})
