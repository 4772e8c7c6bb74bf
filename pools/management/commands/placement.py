"""`placement --pod POD --nodes NODES.json [--pods PODS.json] --format json|table`: which nodes fit, and why not.

Files as kubectl writes them: `kubectl get nodes -o json`, `kubectl get pods -A -o json`; the pod as
YAML or JSON: a Pod, or a Job, CronJob, Deployment, StatefulSet, DaemonSet, ReplicaSet or PodTemplate whose
pod template is placed (`pools.engine.workloads`). Pure engine, no database: the same filters as the
portal's placement preview.
"""

from __future__ import annotations

from pools.engine.placement import NOT_EVALUATED, nodes_from_kubectl, place, prepare_pod
from pools.engine.workloads import pod_of
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
        parser.add_argument("--format", choices=["json", "table"], default="table")

    def handle(self, *args, **options):
        pod = prepare_pod(pod_of(load_document(options["pod"])))  # a bad kind or quantity raises, naming it
        pods = load_document(options["pods"]) if options["pods"] else None
        verdicts = place(pod, nodes_from_kubectl(load_document(options["nodes"]), pods))
        if options["format"] == "json":
            self.emit(
                {
                    "nodes": [{"name": v.node, "fits": v.fits, "reasons": list(v.reasons)} for v in verdicts],
                    "not_evaluated": list(NOT_EVALUATED),
                }
            )
            return
        width = max([len(v.node) for v in verdicts] + [4])
        self.stdout.write(f"{'NODE':<{width}}  FITS  REASONS")
        for verdict in verdicts:
            reasons = "; ".join(verdict.reasons) or "-"
            self.stdout.write(f"{verdict.node:<{width}}  {'yes' if verdict.fits else 'no':<4}  {reasons}")
        fitting = sum(v.fits for v in verdicts)
        self.stdout.write(f"{fitting} of {len(verdicts)} nodes fit. Not evaluated: {', '.join(NOT_EVALUATED)}.")
