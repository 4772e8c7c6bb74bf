"""What an operator does from the admin's workflow list and page (workflows.admin): cancel a workflow (a
confirmation page; its POST goes through `workflows.lifecycle.cancel`, the service the REST API, the CLI and
the live page use, so `access.policy` decides), read a task's log (`workflows.logs.task_log`, the reading the
live page and `/api/workflow/{id}/task/{task}/logs` use) and open the workflow's live page.

The list's row actions carry no permission check (one per row would be a query per row): the cancel page
says why a refusal is one, and its POST is the service's to refuse.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from unfold.decorators import action

from access import actions, policy
from portal.admin_base import confirmation_page
from portal.errors import DomainError
from workflows import logs, queries
from workflows.lifecycle.cancel import cancel, cancel_refusal
from workflows.models import FINISHED_TASK, Workflow

MESSAGE_MAX = 500  # characters of a cancel message (as the live page's form; docs/limits.md)


def live_page_url(workflow: Workflow) -> str:
    """The researchers' live page of the workflow (selfservice's, reached by its URL name only)."""
    return reverse("selfservice:workflow", args=[workflow.workflow_id])


class WorkflowPagesMixin:
    """Cancel, logs and the live page for WorkflowAdmin: buttons on the page, row actions on the list."""

    actions_detail = ["cancel_workflow", "task_logs", "live_page"]
    actions_row = ["cancel_workflow_row", "task_logs_row", "live_page_row"]

    def _workflow(self, request, object_id) -> Workflow:
        workflow = get_object_or_404(Workflow.objects.select_related("pool__backend"), pk=object_id)
        queries.check_readable(workflow, request)  # one the admin may not see is a 404
        return workflow

    def _change_url(self, object_id) -> str:
        return reverse("admin:workflows_workflow_change", args=[object_id])

    def has_cancel_permission(self, request, object_id=None):
        """The button shows where `access.policy` lets the admin cancel and the workflow is unfinished."""
        workflow = Workflow.objects.select_related("pool").filter(pk=object_id).first() if object_id else None
        if workflow is None or workflow.is_finished:
            return False
        return policy.decide(request, actions.WORKFLOW_CANCEL, obj=workflow).allowed

    @action(description="Cancel workflow", url_path="cancel", permissions=["cancel"], icon="cancel")
    def cancel_workflow(self, request, object_id):
        return self._cancel(request, object_id)

    @action(description="Cancel…", url_path="cancel-row", icon="cancel")
    def cancel_workflow_row(self, request, object_id):
        return self._cancel(request, object_id)

    def _cancel(self, request, object_id):
        """GET: what cancelling does, or why it cannot; POST (the page's button): cancel through the service."""
        workflow = self._workflow(request, object_id)
        change_url = self._change_url(object_id)
        if request.method != "POST":
            refusal = self._refusal(workflow, request)
            if refusal:
                self.message_user(request, f"Cannot cancel: {refusal}", messages.ERROR)
                return HttpResponseRedirect(change_url)
            unfinished = workflow.tasks.exclude(status__in=sorted(FINISHED_TASK)).count()
            return confirmation_page(
                self,
                request,
                heading=f"Cancel workflow {workflow.workflow_id}?",
                explanation=f"Its {unfinished} unfinished task(s) become CANCELLED and their pods are deleted; "
                f"the workflow ends CANCELLED (now {workflow.status}). This cannot be undone.",
                confirm_label="Cancel the workflow",
                cancel_url=change_url,
                busy_label="Cancelling…",
                message_label=f"Message (optional, at most {MESSAGE_MAX} characters; shown on its timeline)",
            )
        message = request.POST.get("message", "").strip()
        if len(message) > MESSAGE_MAX:
            self.message_user(
                request, f"Not cancelled: the message has {len(message)} characters, at most {MESSAGE_MAX}",
                messages.ERROR,
            )  # fmt: skip
            return HttpResponseRedirect(change_url)
        try:
            done = cancel(workflow.workflow_id, request, message=message)
        except DomainError as error:
            self.message_user(request, f"Not cancelled: {error.reason}", messages.ERROR)
            return HttpResponseRedirect(change_url)
        self.message_user(request, f"Workflow {done.workflow_id}: {done.status.lower()}.", messages.SUCCESS)
        return HttpResponseRedirect(change_url)

    @staticmethod
    def _refusal(workflow: Workflow, request) -> str:
        if workflow.is_finished:
            return f"workflow {workflow.workflow_id} has already finished ({workflow.status})"
        return cancel_refusal(workflow, request)

    @action(description="Task logs", url_path="logs", icon="article")
    def task_logs(self, request, object_id):
        return self._logs(request, object_id)

    @action(description="Logs", url_path="logs-row", icon="article")
    def task_logs_row(self, request, object_id):
        return HttpResponseRedirect(reverse("admin:workflows_workflow_task_logs", args=[object_id]))

    def _logs(self, request, object_id):
        """One task's last lines (`?task=`, the first by default; `?tail=` 1 to MAX_LINES), read live from the
        cluster, with the notice when there is nothing to read."""
        workflow = self._workflow(request, object_id)
        names = list(queries.tasks_of(workflow).values_list("name", flat=True))
        chosen = request.GET.get("task") or (names[0] if names else "")
        log, error = None, None
        try:
            tail = logs.parse_tail(request.GET.get("tail"))
            if chosen:
                log = logs.task_log(workflow.workflow_id, chosen, request, tail=tail)
        except DomainError as refused:
            error, tail = refused, logs.DEFAULT_TAIL
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Logs of workflow {workflow.workflow_id}",
            "workflow": workflow,
            "names": names,
            "chosen": chosen,
            "tail": tail,
            "max_lines": logs.MAX_LINES,
            "log": log,
            "error": error,
            "change_url": self._change_url(object_id),
            "live_url": live_page_url(workflow),
        }
        return TemplateResponse(request, "admin/workflows/task_logs.html", context)

    @action(description="Live page", url_path="live", icon="open_in_new")
    def live_page(self, request, object_id):
        return HttpResponseRedirect(live_page_url(self._workflow(request, object_id)))

    @action(description="Live page", url_path="live-row", icon="open_in_new")
    def live_page_row(self, request, object_id):
        return HttpResponseRedirect(live_page_url(self._workflow(request, object_id)))
