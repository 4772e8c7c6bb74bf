"""Config REST API on OSMO's paths. Views only translate HTTP; `configs.store` does the work."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, PolymorphicProxySerializer, extend_schema
from rest_framework.permissions import SAFE_METHODS
from rest_framework.response import Response
from rest_framework.views import APIView

from access import actions, usable_pools
from access.api.permissions import ConfigPermission, PolicyPermission
from configs import store
from configs.errors import ConfigError
from configs.models import ConfigType
from configs.revisions import Actor, check_type
from configs.serializers import body_serializers
from pools.api import osmo_shapes, params
from pools.api import serializers as s
from pools.services import pool_listing, verbose_pools
from portal.api import APIRefusal, ErrorSerializer, list_param

ERRORS = {400: ErrorSerializer, 403: ErrorSerializer, 404: ErrorSerializer, 409: ErrorSerializer}
TYPE_PARAM = OpenApiParameter(
    "config_type",
    str,
    OpenApiParameter.PATH,
    enum=[t.lower() for t in ConfigType.values],
    description="Config type, lower case.",
)


# OSMO's listing shapes: an object for most types, an array for roles (`GET /api/configs/role`).
LISTING = {
    "oneOf": [
        {"type": "object", "additionalProperties": {}, "description": "Most types: {pools: {name: body}}, …"},
        {"type": "array", "items": {"type": "object", "additionalProperties": {}}, "description": "ROLE: [role]"},
    ]
}


def config_body() -> PolymorphicProxySerializer:
    """A config body: the shape of its type, derived from the type's description (configs.serializers)."""
    return PolymorphicProxySerializer(
        component_name="ConfigBody", resource_type_field_name=None, serializers=list(body_serializers().values())
    )


def path_type(value: str) -> str:
    return check_type(value, spelled=str.lower)  # the API's paths spell types in lower case


def valid(serializer_class, data) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def actor_of(request) -> Actor:
    return Actor.for_request(request, "api")


class ConfigAPIView(APIView):
    """Config endpoints: `config:Read` / `config:Update` on `config/<type>`, decided by access.policy."""

    permission_classes = [ConfigPermission]

    def check_permissions(self, request):
        # an unknown type is a 400 listing the valid ones, before the policy: wherever it is named
        for field, value in named_types(request, self.kwargs):
            try:
                path_type(value)
            except ConfigError as error:  # DRF's kind of error: the browsable API renders it too
                raise APIRefusal(ConfigError(error.reason, field=field, value=value)) from None
        super().check_permissions(request)


def named_types(request, kwargs: dict) -> list[tuple[str, object]]:
    """(field, value) of each config type a request names: its path, `config_type` and each `config_types`
    in the query (fields named as the serializers name them), `config_type` in a write's body."""
    found = [("config_type", kwargs["config_type"])] if "config_type" in kwargs else []
    query = request.query_params
    if "config_type" in query:
        found.append(("config_type", query["config_type"]))
    listed = query.getlist("config_types")
    found += [("config_types" if i == 0 else f"config_types.{i}", value) for i, value in enumerate(listed)]
    if request.method not in SAFE_METHODS:
        data = request.data  # a malformed body is a 400 (ParseError) here already
        if hasattr(data, "get") and isinstance(data.get("config_type"), str):
            found.append(("config_type", data["config_type"]))
    return found


VERBOSE_PARAM = OpenApiParameter(
    "verbose", bool, description="POOL only: OSMO's verbose form (status, each platform's parsed template, …)."
)
BACKEND_PARAM = OpenApiParameter("backend", str, description="POOL only: the pools of this backend.")


def pool_options(request, kind: str) -> tuple[bool, str | None]:
    """OSMO's `verbose` and `backend` of the pool config reads; named on another type, a 400 naming them."""
    for key in ("verbose", "backend"):
        if key in request.query_params and kind != ConfigType.POOL:
            raise ConfigError("only pools take it (GET /api/configs/pool)", field=key, value=request.query_params[key])
    backend = request.query_params.get("backend")
    if backend is not None and (not backend or "\x00" in backend):
        raise ConfigError("must name a backend", field="backend", value=backend)
    return params.flag(request, "verbose"), backend


class ConfigCollectionView(ConfigAPIView):
    @extend_schema(
        operation_id="configs_list",
        parameters=[TYPE_PARAM, VERBOSE_PARAM, BACKEND_PARAM],
        responses={200: LISTING, **ERRORS},
        summary="Every object of a config type, in OSMO's shape ({pools: {name: body}}, {backends: [..]}, [roles])",
    )
    def get(self, request, config_type):
        kind = path_type(config_type)
        verbose, backend = pool_options(request, kind)
        if kind != ConfigType.POOL:
            return Response(osmo_shapes.listing(kind, store.show(kind)))
        bodies = verbose_pools.pool_bodies(backend)
        return Response(osmo_shapes.listing(kind, verbose_pools.verbose(bodies) if verbose else bodies))

    @extend_schema(
        operation_id="configs_update_many",
        parameters=[TYPE_PARAM],
        request=s.ConfigWriteSerializer,
        responses={200: s.ApplyResultSerializer(many=True), **ERRORS},
        summary="Create or replace several objects at once (all or nothing); `configs_dict` is read as `configs`",
    )
    def put(self, request, config_type):
        data = valid(s.ConfigWriteSerializer, request.data)
        results = store.apply_many(
            path_type(config_type),
            data["configs"],
            actor_of(request),
            description=data["description"],
            tags=data["tags"],
        )
        return Response([r.as_dict() for r in results])


class ConfigObjectView(ConfigAPIView):
    @extend_schema(
        parameters=[TYPE_PARAM, VERBOSE_PARAM], responses={200: config_body(), **ERRORS}, summary="One object's body"
    )
    def get(self, request, config_type, name):
        kind = path_type(config_type)
        if "backend" in request.query_params:
            raise ConfigError("not a filter of one object", field="backend", value=request.query_params["backend"])
        verbose, _ = pool_options(request, kind)
        body = store.show(kind, name)
        return Response(verbose_pools.verbose({name: body})[name] if verbose else body)

    @extend_schema(
        parameters=[TYPE_PARAM],
        request=s.ConfigWriteSerializer,
        responses={200: s.ApplyResultSerializer, **ERRORS},
        summary="Create or replace one object (200 either way, as OSMO; `created` tells)",
    )
    def put(self, request, config_type, name):
        kind = path_type(config_type)
        data = valid(s.ConfigWriteSerializer, request.data)
        body = store.unwrap(kind, name, data["configs"])
        result = store.apply(kind, name, body, actor_of(request), description=data["description"], tags=data["tags"])
        return Response(result.as_dict())

    @extend_schema(
        parameters=[TYPE_PARAM],
        request=s.ConfigWriteSerializer,
        responses={200: s.ApplyResultSerializer, **ERRORS},
        summary="Replace the fields given, keep the others (OSMO's backend update); creates a missing object",
    )
    def post(self, request, config_type, name):
        kind = path_type(config_type)
        data = valid(s.ConfigWriteSerializer, request.data)
        fields = store.unwrap(kind, name, data["configs"])
        if not store.exists(kind, name):
            return self.put(request, config_type, name)
        result = store.patch(
            kind, name, fields, actor_of(request), deep=False, description=data["description"], tags=data["tags"]
        )
        return Response(result.as_dict())

    @extend_schema(
        parameters=[TYPE_PARAM],
        request=s.ConfigPatchSerializer,
        responses={200: config_body(), **ERRORS},
        summary="Merge `configs_dict` into the object (OSMO's named PATCH); answers the new body",
    )
    def patch(self, request, config_type, name):
        kind = path_type(config_type)
        data = valid(s.ConfigPatchSerializer, request.data)
        store.patch(
            kind, name, data["configs_dict"], actor_of(request), description=data["description"], tags=data["tags"]
        )
        return Response(store.show(kind, name))

    @extend_schema(
        parameters=[TYPE_PARAM],
        request=s.ConfigDeleteSerializer,
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        summary="Delete one object",
    )
    def delete(self, request, config_type, name):
        data = valid(s.ConfigDeleteSerializer, request.data or {})
        deleted = store.remove(
            path_type(config_type), name, actor_of(request), description=data["description"], tags=data["tags"]
        )
        return Response(deleted.as_dict())


POOL_LIST_PARAMETERS = [
    OpenApiParameter(
        "all_pools", bool, description="Every pool (the default, as OSMO); false: only the pools you may use."
    ),
    list_param("pools", "Only these pools (repeated, as OSMO's client sends)."),
]


def listed_pools(request) -> list[str] | None:
    """The pools a pool list shows, as OSMO: those named in `?pools=` (unknown names left out); else every pool
    (None; OSMO's `all_pools` defaults to true); with `?all_pools=false` the pools the caller may use
    (`access.usable_pools.allowed_pools`)."""
    named = params.names(request, "pools")
    if named:
        return named
    if params.flag(request, "all_pools", default=True):
        return None
    return sorted(usable_pools.allowed_pools(request))


class PoolListView(APIView):
    """`pool:List`; lists every pool (OSMO's default), each marked `accessible` when the caller may use it
    (`access.usable_pools.allowed_pools`); `?all_pools=false` only those, `?pools=a&pools=b` the ones named."""

    permission_classes = [PolicyPermission]
    policy_action = actions.POOL_LIST

    @extend_schema(
        parameters=POOL_LIST_PARAMETERS,
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        summary="Pools with their platforms and capacity (allocatable, used, free)",
    )
    def get(self, request):
        names = listed_pools(request)
        rows = pool_listing.pool_rows_with_capacity(names) if names is None or names else []
        usable = usable_pools.allowed_pools(request)
        return Response({"pools": {row["name"]: {**row, "accessible": row["name"] in usable} for row in rows}})
