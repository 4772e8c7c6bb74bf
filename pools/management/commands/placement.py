"""`placement --pod POD --nodes NODES.json [--pods PODS.json] --format json|table`: which nodes fit, and why not.

Files as kubectl writes them: `kubectl get nodes -o json`, `kubectl get pods -A -o json`; the pod as
YAML or JSON: a Pod, or a Job, CronJob, Deployment, StatefulSet, DaemonSet, ReplicaSet or PodTemplate whose
pod template is placed (`pools.engine.workloads`). Pure engine, no database: the same filters as the
portal's placement preview. With `--machine-pools FILE` (`{name: {instance_type, min_replicas, max_replicas,
labels, taints, spot}}`), each autoscaled machine pool with no node among NODES adds its would-be node
(the shipped instance-type catalog's shape), marked as such (docs/machine-pool-platforms.md).
"""

from __future__ import annotations

from clusters.machinepools.catalog import shipped
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
            "--machine-pools", help="machine pools (YAML/JSON map): the scale-from-zero ones add a would-be node"
        )
        parser.add_argument("--format", choices=["json", "table"], default="table")

    def handle(self, *args, **options):
        pod = prepare_pod(pod_of(load_document(options["pod"])))  # a bad kind or quantity raises, naming it
        pods = load_document(options["pods"]) if options["pods"] else None
        nodes = nodes_from_kubectl(load_document(options["nodes"]), pods)
        if options["machine_pools"]:
            nodes += would_be_from_document(load_document(options["machine_pools"]), nodes, shipped())
        verdicts = place(pod, nodes)
        if options["format"] == "json":
            self.emit(
                {
                    "nodes": [_as_json(verdict) for verdict in verdicts],
                    "not_evaluated": list(NOT_EVALUATED),
                }
            )
            return
        width = max([len(v.node) for v in verdicts] + [4])
        self.stdout.write(f"{'NODE':<{width}}  FITS  REASONS")
        for verdict in verdicts:
            reasons = "; ".join(verdict.reasons) or "-"
            reasons = f"{reasons} ({verdict.would_be})" if verdict.would_be else reasons
            self.stdout.write(f"{verdict.node:<{width}}  {'yes' if verdict.fits else 'no':<4}  {reasons}")
        fitting = sum(v.fits for v in verdicts)
        self.stdout.write(f"{fitting} of {len(verdicts)} nodes fit. Not evaluated: {', '.join(NOT_EVALUATED)}.")


def _as_json(verdict) -> dict:
    data = {"name": verdict.node, "fits": verdict.fits, "reasons": list(verdict.reasons)}
    if verdict.would_be:
        data["would_be"] = verdict.would_be
    return data
