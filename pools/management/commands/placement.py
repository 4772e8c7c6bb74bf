"""`placement --pod POD --nodes NODES.json [--pods PODS.json] --format json|table`: which nodes fit, and why not.

Files as kubectl writes them: `kubectl get nodes -o json`, `kubectl get pods -A -o json`; the pod as
YAML or JSON: a Pod, or a Job, CronJob, Deployment, StatefulSet, DaemonSet, ReplicaSet or PodTemplate whose
pod template is placed (`pools.engine.workloads`). Pure engine, no database: the same filters as the
portal's placement preview. With `--machine-pools FILE` (what `config show MACHINE_POOL --format yaml|json`
prints, `{name: document}`; or the model's fields, `{name: {instance_type, min_replicas, max_replicas, labels,
taints, spot}}`), each autoscaled machine pool with no node among NODES adds its would-be node (the shipped
instance-type catalog's shape), marked as such (docs/machine-pool-platforms.md).

With `--pool POOL [--platform PLATFORM]` the pod is confined as that platform's tasks' pods are: the selector of
the node pool it is charged to merged in (`pools.confinement`, installed by quotas; the one database read), and
each node is shown with the node pool its labels put it in, a node outside it rejected with
"node x is in node pool y, the task is confined to node pool z" (docs/placement.md, "Node pools").
"""

from __future__ import annotations

from dataclasses import replace

from clusters.machinepools.catalog import shipped
from pools import confinement as confining
from pools.engine.placement import NOT_EVALUATED, nodes_from_kubectl, place, prepare_pod
from pools.engine.workloads import pod_of
from pools.services.scale_from_zero_node import would_be_from_document
from portal.commands import PortalCommand
from portal.docfiles import load_document


class Command(PortalCommand):
    help = "Explain where a pod can be placed among kubectl-exported nodes (and pods)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--pod",
            required=True,
            help="Pod manifest, or a workload with a pod template (Job, CronJob, Deployment, ...)",
        )
        parser.add_argument("--nodes", required=True, help="kubectl get nodes -o json")
        parser.add_argument("--pods", help="kubectl get pods -A -o json (their requests occupy the nodes)")
        parser.add_argument(
            "--machine-pools",
            help="machine pools (`config show MACHINE_POOL --format yaml`): scale-from-zero ones add a would-be node",
        )
        parser.add_argument(
            "--pool", help="confine the pod as this pool's tasks are: to the node pool its platform is charged to"
        )
        parser.add_argument("--platform", help="with --pool: the platform (default: the pool's default platform)")
        parser.add_argument("--format", choices=["json", "table"], default="table")

    def handle(self, *args, **options):
        raw = pod_of(load_document(options["pod"]))  # a bad kind raises, naming it
        pod = prepare_pod(raw)  # so does a bad quantity, before the nodes are read
        pods = load_document(options["pods"]) if options["pods"] else None
        nodes = nodes_from_kubectl(load_document(options["nodes"]), pods)
        if options["machine_pools"]:
            nodes += would_be_from_document(load_document(options["machine_pools"]), nodes, shipped())
        confinement, node_pools = None, None
        if options["pool"]:
            confinement, backend_id = _confinement(options["pool"], options["platform"])
            if confinement:
                pod = prepare_pod(confining.confined(raw, confinement.node_selector))  # as the task's pods get it
                node_pools = confining.node_pools(backend_id, {node.name: node.labels for node in nodes})
        verdicts = [_named(v, confinement, node_pools) for v in place(pod, nodes)]
        if options["format"] == "json":
            self.emit(_as_document(verdicts, confinement, node_pools))
            return
        self._table(verdicts, confinement, node_pools)

    def _table(self, verdicts: list, confinement, node_pools: dict | None) -> None:
        if confinement:
            selector = ", ".join(f"{k}={v}" for k, v in confinement.node_selector.items())
            where = f"Confined to node pool {confinement.node_pool}"
            self.stdout.write(f"{where} (nodeSelector {selector}, {confinement.origin})")
        width = max([len(v.node) for v in verdicts] + [4])
        pools = [(node_pools or {}).get(v.node, "-") for v in verdicts] if node_pools is not None else None
        pool_width = max([len(p) for p in pools or []] + [9])
        head = f"{'NODE':<{width}}  " + (f"{'NODE POOL':<{pool_width}}  " if pools else "")
        self.stdout.write(f"{head}FITS  REASONS")
        for index, verdict in enumerate(verdicts):
            reasons = "; ".join(verdict.reasons) or "-"
            reasons = f"{reasons} ({verdict.would_be})" if verdict.would_be else reasons
            pool = f"{pools[index]:<{pool_width}}  " if pools else ""
            self.stdout.write(f"{verdict.node:<{width}}  {pool}{'yes' if verdict.fits else 'no':<4}  {reasons}")
        fitting = sum(v.fits for v in verdicts)
        self.stdout.write(f"{fitting} of {len(verdicts)} nodes fit. Not evaluated: {', '.join(NOT_EVALUATED)}.")


def _confinement(pool_name: str, platform_name: str | None):
    """(the confinement of the platform's tasks or None, the pool's backend id); an unknown pool or platform is
    refused, naming it."""
    from pools.services.preview import find_platform  # the database: only with --pool

    platform = find_platform(pool_name, platform_name)
    return confining.of_platform(platform.pool, platform.name), platform.pool.backend_id


def _named(verdict, confinement, node_pools: dict | None):
    """The verdict with a reason about the node pool's selector naming both node pools."""
    if confinement is None or verdict.fits:
        return verdict
    named = confining.named_reasons({"rejected": {verdict.node: list(verdict.reasons)}}, confinement, node_pools)
    return replace(verdict, reasons=list(named["rejected"][verdict.node]))


def _as_document(verdicts: list, confinement, node_pools: dict | None) -> dict:
    document = {"nodes": [_as_json(v, node_pools) for v in verdicts], "not_evaluated": list(NOT_EVALUATED)}
    if confinement:
        document["confinement"] = {**confinement.to_dict(), "origin": confinement.origin}
    return document


def _as_json(verdict, node_pools: dict | None = None) -> dict:
    data = {"name": verdict.node, "fits": verdict.fits, "reasons": list(verdict.reasons)}
    if node_pools is not None:
        data["node_pool"] = node_pools.get(verdict.node)
    if verdict.would_be:
        data["would_be"] = verdict.would_be
    return data
