"""Self-service pages (server-rendered; htmx swaps fragments where it helps). Thin: parse, ask the policy
(through the services, which call `access.policy`), call a service, render. Domain errors are shown on
the page with their field and reason, never as a server error."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from access import actions, policy
from access.oidc.configuration import oidc_enabled
from notifications.services.outbox import of_workflow as notifications_of
from pools.models import Pool
from pools.presenters import preview_tasks
from pools.services import profiles
from portal.errors import DomainError, NotFound, PermissionDenied, PortalError
from portal.form_limits import body_too_large, form_too_large, refuses_oversized_forms, spec_form_too_large
from selfservice import credential_views
from selfservice.forms import AccessRequestForm, NotificationsForm, PoolRequestForm, SpecForm, WorkflowFilterForm
from selfservice.presenters import describe_error, locate_in_spec
from selfservice.services import catalog as catalog_service
from selfservice.services import examples, team_usage
from selfservice.services import requests as request_service
from selfservice.services import workflows as workflow_service
from selfservice.timeline import timelines
from workflows import logs
from workflows.lifecycle.cancel import cancel
from workflows.services import CREATE, SubmitRequest, submit
from workflows.spec_fields import SpecError

REQUEST_KINDS = ("access", "pool")


def _htmx(request) -> bool:
    return request.headers.get("HX-Request") == "true"


class PortalLoginView(LoginView):
    """Local accounts sign in here; with OIDC configured, a button leads to the identity provider."""

    template_name = "selfservice/login.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "oidc_enabled": oidc_enabled()}


# --- catalog and pool pages ------------------------------------------------------------------------------


@login_required
@require_GET
def catalog(request):
    found = catalog_service.catalog(request)
    cards = found.cards
    return render(
        request,
        "selfservice/catalog.html",
        {
            "cards": cards,
            "roles": policy.role_names(request),
            "usable_count": sum(card.usable for card in cards),
            "capacity_as_of": found.capacity_as_of,
        },
    )


@login_required
@require_GET
def pool_detail(request, name):
    try:
        page = catalog_service.pool_page(name, request)
    except DomainError as error:
        return _error_page(request, error)
    usage = team_usage.for_panels(page.quota, request)
    return render(request, "selfservice/pool.html", {"page": page, "pool": page.pool, "team_usage": usage})


# --- submit with preview ----------------------------------------------------------------------------------


def _submit_context(request, name):
    """The pool, if the principal may submit to it; else a rendered 403/404 page (audited). An htmx
    request for an unknown pool gets the preview fragment with the message, as a 404 (base.html has htmx
    swap 404 answers, so the message shows where the preview would have)."""
    try:
        pool = catalog_service.get_pool(name)
    except DomainError as error:
        if _htmx(request):
            return None, render(
                request, "selfservice/_preview.html", {"error": describe_error(error)}, status=error.status
            )
        return None, _error_page(request, error)
    try:
        policy.require(request, CREATE, actions.pool(pool.name))  # audits the refusal
    except policy.PolicyRefusal as refusal:
        return None, render(
            request,
            "selfservice/forbidden.html",
            {
                "pool": pool,
                "because": refusal.decision.because,
                "message": f"You may not submit workflows to pool {pool.name}.",
            },
            status=403,
        )
    return pool, None


def _oversized(request):
    """The page's error for a form over DATA_UPLOAD_MAX_MEMORY_SIZE (portal.form_limits): nothing was read."""
    return describe_error(SpecError(spec_form_too_large(), field="spec", value=f"{form_too_large(request)} bytes"))


@refuses_oversized_forms
@login_required
@require_http_methods(["GET", "POST"])
def submit_page(request, name):
    pool, refused = _submit_context(request, name)
    if refused is not None:
        return refused
    found = examples.example_choices(pool)  # the chips; only the chosen example is sized, and only to show it
    context = {"pool": pool, "examples": found, "chosen": None}  # a posted spec is the user's, no example
    if request.method == "GET":
        context["chosen"] = chosen = examples.example(pool, request.GET.get("example"))
        form = SpecForm(initial={"spec": chosen.text, "priority": "NORMAL"})
        if _htmx(request) and request.GET.get("example"):
            return render(request, "selfservice/_editor.html", {**context, "form": form})
        return render(request, "selfservice/submit.html", {**context, "form": form})
    if form_too_large(request):  # the editor starts empty: the text was not read
        form, error = SpecForm(initial={"priority": "NORMAL"}), _oversized(request)
        return render(request, "selfservice/submit.html", {**context, "form": form, "error": error}, status=400)
    form = SpecForm(request.POST)
    if not form.is_valid():
        return render(request, "selfservice/submit.html", {**context, "form": form}, status=400)
    try:
        result = submit(
            SubmitRequest(
                pool.name,
                form.cleaned_data["spec"],
                request,
                priority=form.cleaned_data["priority"],
                project=form.cleaned_data["project"],
                source="editor",
            )
        )
    except PortalError as error:
        view = locate_in_spec(describe_error(error), error, form.cleaned_data["spec"])
        return render(request, "selfservice/submit.html", {**context, "form": form, "error": view}, status=view.status)
    messages.success(request, f"Workflow {result.workflow_id} submitted to {pool.name}.")
    return redirect("selfservice:workflow", workflow_id=result.workflow_id)


@refuses_oversized_forms
@login_required
@require_POST
def preview(request, name):
    """Dry run: the resolved pod per task with where each value came from, the verdict, the node verdicts."""
    pool, refused = _submit_context(request, name)
    if refused is not None:
        if _htmx(request) and refused.status_code == 403:  # the refusal inside the page, not swapped away
            return render(
                request,
                "selfservice/_preview.html",
                {"error": describe_error(PermissionDenied(f"You may not submit workflows to pool {name}."))},
            )
        return refused
    form = SpecForm(None if form_too_large(request) else request.POST, initial={"priority": "NORMAL"})
    context, status = {"pool": pool}, 200
    if form_too_large(request):
        context["error"], status = _oversized(request), 400
    elif form.is_valid():
        try:
            result = submit(
                SubmitRequest(
                    pool.name,
                    form.cleaned_data["spec"],
                    request,
                    dry_run=True,
                    priority=form.cleaned_data["priority"],
                    project=form.cleaned_data["project"],
                    source="editor",
                )
            )
            context.update(tasks=preview_tasks(result.as_dict()), warnings=result.warnings)
        except PortalError as error:
            context["error"] = locate_in_spec(describe_error(error), error, form.cleaned_data["spec"])
            status = context["error"].status
    else:
        context["form_errors"] = form.errors
        status = 400
    if _htmx(request):
        return render(request, "selfservice/_preview.html", context)  # htmx only swaps 2xx answers
    found = examples.example_choices(pool)
    return render(
        request,
        "selfservice/submit.html",
        {**context, "form": form, "examples": found, "chosen": None, "previewed": True},
        status=status,
    )


# --- my workflows --------------------------------------------------------------------------------------------


@login_required
@require_GET
def workflow_list(request):
    form, status = WorkflowFilterForm(request.GET), 200
    found, error = workflow_service.WorkflowPage([], "", []), None
    if form.is_valid():
        chosen = form.cleaned_data
        try:
            found = workflow_service.workflows_of(
                request, status=chosen["status"], pool=chosen["pool"], search=chosen["q"], after=chosen["after"]
            )
        except PortalError as refused:
            error, status = f"{refused.field} {refused.reason}", 400
    else:
        field, reasons = next(iter(form.errors.items()))
        error, status = f"{field}: {reasons[0]}", 400
    rows = found.rows
    context = {
        "workflows": rows,
        "page": found,
        "form": form,
        "error": error,
        "filtered": any(form.data.get(name) for name in ("status", "pool", "q", "after")),
        "polling": not form.data.get("after") and any(not w.is_finished for w in rows),
    }
    if _htmx(request):
        return render(request, "selfservice/_workflow_rows.html", context, status=status)
    context["team_usage"] = team_usage.for_viewer(request)  # the full page only, not the rows' polling
    return render(request, "selfservice/workflows.html", context, status=status)


@login_required
@require_GET
def workflow_detail(request, workflow_id):
    try:
        workflow = workflow_service.get_workflow(workflow_id, request)
    except DomainError as error:
        return _error_page(request, error)
    context = _workflow_context(request, workflow)
    if _htmx(request):
        return render(request, "selfservice/_workflow_status.html", context)
    return render(request, "selfservice/workflow.html", context)


def _workflow_context(request, workflow):
    tasks = list(workflow.tasks.all())
    return {
        "workflow": workflow,
        "tasks": tasks,
        "log_task": _log_task(tasks),
        "timelines": timelines(workflow),
        "notifications": notifications_of(workflow),
        "may_cancel": not workflow.is_finished and workflow_service.may_cancel(workflow, request),
        "spec_yaml": workflow_service.resolved_spec_yaml(workflow),
        "pods": [(task, workflow_service.pod_yaml(task)) for task in workflow.tasks.all()],
    }


def _log_task(tasks):
    """Whose log the pane shows first: a running task, else the lead, else the first."""
    running = [t for t in tasks if t.status == "RUNNING"]
    return (running or [t for t in tasks if t.lead] or tasks or [None])[0]


@login_required
@require_GET
def task_log(request, workflow_id, task_name):
    """The task's container log as JSON for the page's log pane: the last `tail` lines, or those after
    `since` (a follower's cursor). What cannot be read is a `notice` in a 200 answer; refusals are JSON."""
    try:
        log = logs.task_log(
            workflow_id,
            task_name,
            request,
            tail=logs.parse_tail(request.GET.get("tail")),
            since=logs.parse_since(request.GET.get("since")),
        )
    except DomainError as error:
        return JsonResponse(error.as_dict(), status=error.status)
    return JsonResponse(log.as_dict())


@login_required
@require_POST
def workflow_cancel(request, workflow_id):
    try:
        workflow_service.get_workflow(workflow_id, request, with_events=False)
    except DomainError as error:  # unknown (404), or not yours to see (403): a page, as for GET
        return _error_page(request, error)
    try:
        workflow = cancel(workflow_id, request, message=request.POST.get("message", "")[:500])
        messages.success(request, f"Workflow {workflow.workflow_id}: {workflow.status.lower()}.")
    except DomainError as error:
        if error.status == 404:
            return _error_page(request, error)
        messages.error(request, f"Not cancelled: {error.reason}")
    return redirect("selfservice:workflow", workflow_id=workflow_id)


# --- requests ---------------------------------------------------------------------------------------------


@refuses_oversized_forms
@login_required
@require_http_methods(["GET", "POST"])
def requests_page(request):
    requestable = _requestable_pools(request)
    access_form = AccessRequestForm(pools=requestable, initial={"pool": request.GET.get("pool")})
    pool_form = PoolRequestForm()
    status = 200
    if request.method == "POST" and form_too_large(request):
        messages.error(request, f"Not sent: {body_too_large()} (this one has {form_too_large(request)}).")
        status = 400
    elif request.method == "POST":
        kind = request.POST.get("kind")
        try:
            if kind == "access":
                access_form = AccessRequestForm(request.POST, pools=requestable)
                if access_form.is_valid():
                    made = request_service.request_access(
                        request.user, access_form.cleaned_data["pool"], access_form.cleaned_data["justification"]
                    )
                    messages.success(request, f"Access to {made.pool.name} requested; an administrator decides.")
                    return redirect(reverse("selfservice:requests") + "#mine")
            elif kind == "pool":
                pool_form = PoolRequestForm(request.POST)
                if pool_form.is_valid():
                    data = pool_form.cleaned_data
                    made = request_service.request_pool(
                        request.user, data["team"], data["hardware"], data["gpus"], data["purpose"]
                    )
                    messages.success(request, f"Pool {made.pool_name} requested; an administrator decides.")
                    return redirect(reverse("selfservice:requests") + "#mine")
            else:
                messages.error(request, str(_unknown_kind(kind or "")))
        except DomainError as error:
            form = access_form if kind == "access" else pool_form
            form.add_error(error.field if error.field in form.fields else None, error.reason)
        status = 400
    access, pools = request_service.requests_of(request)
    return render(
        request,
        "selfservice/requests.html",
        {
            "access_form": access_form,
            "pool_form": pool_form,
            "access_requests": access,
            "pool_requests": pools,
            "requestable": requestable,
            "chosen_pool": request.GET.get("pool", ""),
        },
        status=status,
    )


@login_required
@require_GET
def requests_of_kind(request, kind):
    """`/requests/access/` and `/requests/pool/` lead to their form; any other kind is a 404 naming it."""
    if kind in REQUEST_KINDS:
        return redirect(reverse("selfservice:requests") + f"#{kind}")
    return _error_page(request, _unknown_kind(kind))


def _unknown_kind(kind: str) -> NotFound:
    return NotFound(
        f"there is no {kind!r} request; requests are {' or '.join(REQUEST_KINDS)} requests", field="kind", value=kind
    )


@login_required
@require_POST
def request_withdraw(request, kind, pk):
    try:
        request_service.withdraw(request.user, kind, pk)
        messages.success(request, "Request withdrawn.")
    except DomainError as error:
        messages.error(request, error.reason)
    return redirect(reverse("selfservice:requests") + "#mine")


def _requestable_pools(request) -> list[str]:
    usable = policy.restrict(Pool.objects.all(), request, CREATE).values("pk")
    return list(Pool.objects.exclude(pk__in=usable).order_by("name").values_list("name", flat=True))


# --- errors ---------------------------------------------------------------------------------------------------


def _error_page(request, error: DomainError):
    view = describe_error(error)
    return render(request, "selfservice/error.html", {"error": view}, status=view.status)


# --- profile ---------------------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def profile_page(request, credential_form=None):
    """Notification settings (the same profile `osmo profile set notifications` changes), and the user's
    credentials (`selfservice.credential_views`; a refused new credential is shown here, `credential_form`)."""
    adding = credential_form is not None
    try:
        writing = request.method == "POST" and not adding
        policy.require(request, actions.PROFILE_UPDATE if writing else actions.PROFILE_READ, "")
    except PermissionDenied as error:
        return _error_page(request, error)
    current = profiles.notification_settings(request.user)
    form = NotificationsForm(None if adding else request.POST or None, initial=current)
    status = 400 if adding else 200
    extra = credential_views.context(request, credential_form)
    if request.method == "POST" and not adding:
        if form.is_valid():
            try:
                profiles.update(request, form.changes())
                messages.success(request, "Notification settings saved.")
                return redirect("selfservice:profile")
            except DomainError as error:
                form.add_error(error.field if error.field in form.fields else None, error.reason)
        status = 400
    return render(request, "selfservice/profile.html", {"form": form, "current": current, **extra}, status=status)
