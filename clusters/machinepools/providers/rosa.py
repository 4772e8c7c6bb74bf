"""ROSA: machine pools through the OpenShift Cluster Manager REST API (clusters_mgmt v1).

    GET/POST          {ocm_url}/api/clusters_mgmt/v1/clusters/{ocm_cluster_id}/machine_pools
    PATCH/DELETE      .../machine_pools/{id}

with OCM's field names: `instance_type`, `replicas` or `autoscaling: {min_replicas, max_replicas}`, `labels`,
`taints: [{key, value, effect}]`, `aws.spot_market_options.max_price` (absent: on-demand; present without a
price: capped at the on-demand price), `root_volume.aws.size` (GiB), `availability_zones`, `subnets`,
`aws.additional_security_group_ids`, `aws.tags`; `status.current_replicas` counts nodes.

The portal marks the pools it made with the label `app.kubernetes.io/managed-by: pool-portal` (which OCM puts
on their nodes too) and never deletes another one, least of all ROSA's default `worker` pool. OCM refuses to
change a pool's instance type (400): that permanent answer is what the pool shows.
"""

from __future__ import annotations

from decimal import Decimal

import requests

from clusters.machinepools.providers.base import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
    ROSA_FIELDS,
    TRANSIENT_STATUSES,
    Observed,
    ProviderError,
)
from clusters.machinepools.spec import MachinePoolSpec, Taint
from portal.secrets import is_unreadable

DEFAULT_POOL = "worker"  # ROSA's own: never the portal's
TIMEOUT = (5.0, 30.0)  # seconds: connect, read
API = "/api/clusters_mgmt/v1/clusters/{cluster}/machine_pools"


def from_backend(backend, catalog=None) -> RosaProvider:
    """The provider of a backend whose machine_provider is rosa (its settings checked by `provider_for`)."""
    for setting in ("ocm_url", "ocm_token"):  # ocm_cluster_id is the registry's need, checked before
        if not getattr(backend, setting):
            raise ProviderError(f"backend {backend.name}: machine provider rosa needs {setting}", field=setting)
    if is_unreadable(backend.ocm_token):
        raise ProviderError(
            f"backend {backend.name}: the stored ocm_token cannot be decrypted with the configured "
            "FIELD_ENCRYPTION_KEYS: restore the key it was written with, or set the token again",
            field="ocm_token",
        )
    return RosaProvider(backend.ocm_url, backend.ocm_cluster_id, backend.ocm_token)


class RosaProvider:
    name = "rosa"
    fields = ROSA_FIELDS

    def __init__(self, ocm_url: str, cluster_id: str, token: str, *, timeout: tuple[float, float] = TIMEOUT) -> None:
        self.base = ocm_url.rstrip("/") + API.format(cluster=cluster_id)
        self.cluster_id = cluster_id
        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers.update({"Authorization": f"Bearer {token.strip()}", "Accept": "application/json"})

    def observe(self) -> dict[str, Observed]:
        answer = self._call("GET", "", "listing the machine pools")
        return {item["id"]: observed(item) for item in answer.get("items") or ()}

    def create(self, spec: MachinePoolSpec) -> Observed:
        try:
            return observed(self._call("POST", "", f"creating machine pool {spec.name}", ocm_body(spec)))
        except ProviderError as error:
            if error.provider_status == 409:  # created meanwhile (another pass): the next pass compares it
                raise ProviderError(error.reason, transient=True, provider_status=409) from None
            raise

    def update(self, spec: MachinePoolSpec, current: Observed) -> Observed:
        body = ocm_body(spec)
        del body["id"]
        return observed(self._call("PATCH", f"/{current.provider_id}", f"updating machine pool {spec.name}", body))

    def delete(self, current: Observed) -> None:
        if current.provider_id == DEFAULT_POOL or not current.managed:
            raise ProviderError(f"machine pool {current.provider_id} is not the portal's: it is never deleted")
        try:
            self._call("DELETE", f"/{current.provider_id}", f"deleting machine pool {current.provider_id}")
        except ProviderError as error:
            if error.provider_status != 404:  # 404: gone already (another pass, or someone at OCM)
                raise

    def close(self) -> None:
        self.session.close()

    def _call(self, method: str, path: str, doing: str, body: dict | None = None) -> dict:
        where = f"OCM cluster {self.cluster_id}: {doing}"
        try:
            response = self.session.request(method, self.base + path, json=body, timeout=self.timeout)
        except requests.RequestException as error:
            raise ProviderError(f"{where}: {type(error).__name__}: {_first_line(error)}", transient=True) from None
        if response.status_code >= 400:
            raise ProviderError(
                f"{where}: HTTP {response.status_code}: {_reason(response)}",
                transient=response.status_code in TRANSIENT_STATUSES,
                provider_status=response.status_code,
            )
        if response.status_code == 204 or not response.content:
            return {}
        try:
            return response.json()
        except ValueError:
            raise ProviderError(f"{where}: the answer is not JSON", transient=True) from None


def ocm_body(spec: MachinePoolSpec) -> dict:
    """The OCM MachinePool a spec asks for."""
    body: dict = {
        "id": spec.name,
        "instance_type": spec.instance_type,
        "labels": {**spec.labels, MANAGED_BY_LABEL: MANAGED_BY},
        "taints": [taint.as_kubernetes() for taint in spec.taints],
        "root_volume": {"aws": {"size": spec.disk_size_gib}},
    }
    if spec.autoscaling:
        body["autoscaling"] = {"min_replicas": spec.min_replicas, "max_replicas": spec.max_replicas}
    else:
        body["replicas"] = spec.replicas
    aws: dict = {}
    if spec.spot:
        market = {} if spec.max_price is None else {"max_price": float(spec.max_price)}
        aws["spot_market_options"] = market
    if spec.security_groups:
        aws["additional_security_group_ids"] = list(spec.security_groups)
    if spec.aws_tags:
        aws["tags"] = dict(spec.aws_tags)
    if aws:
        body["aws"] = aws
    if spec.availability_zones:
        body["availability_zones"] = list(spec.availability_zones)
    if spec.subnets:
        body["subnets"] = list(spec.subnets)
    return body


def observed(item: dict) -> Observed:
    """An OCM MachinePool in the portal's terms."""
    labels = dict(item.get("labels") or {})
    managed = labels.pop(MANAGED_BY_LABEL, None) == MANAGED_BY and item["id"] != DEFAULT_POOL
    scaling = item.get("autoscaling")
    aws = item.get("aws") or {}
    market = aws.get("spot_market_options")
    price = (market or {}).get("max_price")
    spec = MachinePoolSpec(
        name=item["id"],
        instance_type=item.get("instance_type", ""),
        autoscaling=bool(scaling),
        replicas=int(item.get("replicas") or 0),
        min_replicas=int((scaling or {}).get("min_replicas") or 0),
        max_replicas=int((scaling or {}).get("max_replicas") or 0),
        labels=labels,
        taints=tuple(Taint(t["key"], t.get("value", ""), t["effect"]) for t in item.get("taints") or ()),
        spot=market is not None,
        max_price=None if price is None else Decimal(str(price)),
        disk_size_gib=int(((item.get("root_volume") or {}).get("aws") or {}).get("size") or 300),
        availability_zones=tuple(item.get("availability_zones") or ()),
        subnets=tuple(item.get("subnets") or ()),
        security_groups=tuple(aws.get("additional_security_group_ids") or ()),
        aws_tags=dict(aws.get("tags") or {}),
    )
    current = (item.get("status") or {}).get("current_replicas")
    return Observed(spec, item["id"], managed, None if current is None else int(current))


def _reason(response) -> str:
    """OCM's own words: the `reason` of its error body, else the start of whatever it answered."""
    try:
        body = response.json()
    except ValueError:
        return _first_line(response.text)[:200] or response.reason or "no reason given"
    if isinstance(body, dict) and body.get("reason"):
        code = f" ({body['code']})" if body.get("code") else ""
        return f"{body['reason']}{code}"
    return str(body)[:200]


def _first_line(value) -> str:
    return str(value).strip().splitlines()[0] if str(value).strip() else ""
