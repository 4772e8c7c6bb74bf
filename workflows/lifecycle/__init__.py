"""What happens to a workflow after it is stored: pods created, pod status folded back into tasks, exit
actions, the workflow's status derived from its tasks, cancel.

Every state change is a conditional UPDATE (`transitions.transition`: `WHERE pk = … AND pod_name = … AND
status IN …`), so the same observation applied twice (a watch event and the reconciler, a redelivered Celery message,
two workers) changes the row and writes its TaskEvent once. Pods have deterministic names and carry
the portal's ownership labels, so creating one twice finds the first (`clusters.kube.pods.create_pod`).

Task statuses: PENDING (no pod yet) → WAITING (pod created, not running) → RUNNING → COMPLETED / FAILED,
or FAILED_QUEUE_TIMEOUT / FAILED_EXEC_TIMEOUT (`workflows.timeouts`), FAILED_BACKEND_ERROR (the cluster
refused the pod, or it vanished), CANCELLED. A RESCHEDULE exit action sends the task back to PENDING with
`retry_id + 1` and a new pod name (`<workflow>-<task>-r<N>`).

A workflow fails fast: when a task that counts ends in a failure, its unfinished siblings are stopped
(CANCELLED, pods deleted) and the workflow takes the failing task's status. In a group with
`ignoreNonleadStatus` (OSMO's default) only the lead counts, and the lead finishing stops the group's
other tasks (a server beside a client, say); see `settle.settle`. Pods are deleted by the Celery task
`workflows.tasks.delete_pods`, enqueued after commit; the reaper (`workflows.reconcile.reap_all`) deletes
whatever is left.

Modules, in the order they build on each other:

* `transitions` — task status groups, the workflow lock, the guarded UPDATE, events, deferred pod deletion;
* `settle` — a workflow's status derived from its tasks, fail fast, stopping a group, `fail_task`;
* `exits` — a finished pod's exit code → COMPLETE / FAIL / RESCHEDULE (a retry with a new pod);
* `interruption` — a spot interruption recognized (the node's spot taint, the pod's DisruptionTarget) and
  ended by the task's exit action for 3001, then 143 (RESCHEDULE: the next attempt);
* `observe` — a pod (watch event or reconciler read) folded into its task;
* `create` — creating the pods of PENDING tasks (and adopting pods an earlier attempt created);
* `cancel` — cancelling a workflow, and who may;
* `admission` — the hooks quota admission uses: admit a QUEUED workflow, hold it with a reason, preempt it
  (exit code 3006, then its exit action), and the queue timeout of a QUEUED workflow (docs/admission.md).
"""
