"""What the inventory tells the apps above it; clusters itself knows none of them (docs/clusters.md).

`nodes_changed`: sent by `clusters.inventory` right after it wrote nodes whose labels, taints or cordon
may have changed, inside the writing transaction (a receiver's writes commit or roll back with the
nodes). Arguments: `backend_id`; `names`, the node names, or `ALL` for every node of the backend;
`nodes`, the `Node` rows just written when their ids are known (a receiver need not read them back),
else None; `previous`, when known (watch events), maps the names of nodes that existed before to their
former `labels`, `taints` and `unschedulable` (a node absent from it is new), else None; `generation`,
when read with the nodes (watch events on PostgreSQL), the config generation (`portal.generation`) the
receivers may key their caches by, else None.
Rows that reference deleted nodes go with them (CASCADE); `nodes_deleted` says only that some went, for
caches of answers that count them (quotas' charging cache). Arguments: `backend_id`.

`machine_pool_changed`: sent after a `MachinePool` row is saved, inside the saving transaction, whichever
door saved it. Arguments: `machine_pool` (the row), `created`, `update_fields` (None: every field). The
pools app keeps the pod template of a platform made from the machine pool in step with its taints.
"""

from django.dispatch import Signal

ALL = "all"

nodes_changed = Signal()
machine_pool_changed = Signal()
nodes_deleted = Signal()
