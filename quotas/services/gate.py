"""The admission gate quotas installs in workflows (`workflows.admission_gate`, from `quotas.apps`): what
workflows asks at submission, answered from quotas' services (docs/admission.md)."""

from __future__ import annotations

from quotas.services import charge_cache
from quotas.services.admission_passes import request_passes_in
from quotas.services.fit import checker
from quotas.services.scheduler_status import scheduler_says
from workflows.admission_gate import Charge


class AdmissionGate:
    """What workflows asks at submission (workflows.admission_gate): the node pool a workflow is charged to,
    and whether it waits QUEUED for admission (a managed node pool) or is admitted at once (docs/admission.md):
    unmanaged, or on a backend whose own scheduler (KAI, Kueue) admits (docs/quota-schedulers.md)."""

    def charge(self, workflow, platform: str):
        node_pool, queue, selector = charge_cache.charge(workflow.pool, platform)  # cached per process (charging epoch)
        return Charge(node_pool, queue=queue, node_selector=selector)

    def checker(self, workflow, node_pools: set[str]):
        return checker(workflow.pool.backend_id, workflow.project, node_pools).refuse

    def on_queued(self, node_pools: set[str]) -> None:
        request_passes_in(node_pools)

    def scheduler_says(self, workflow) -> dict | None:
        """A delegated workflow not running yet: what KAI or Kueue says of its queue (docs/quota-schedulers.md)."""
        return scheduler_says(workflow)
