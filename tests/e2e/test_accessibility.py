"""Every page passes axe-core (tests/e2e/looks.py: `axe_violations`) with no serious or critical violation: the
researcher's pages at 1440 and 390 px, and the admin console at 1440 px (at 390 px its home, a pool's form, the
usage page and every model's list): the dashboard, every model's list and one change form per model (the add
form where there is no object), and the pages of our own (usage, quota grid and its what-if preview, fair share,
pod preview, revision diff, sync confirmation). Every page also keeps a main landmark and all its content inside
landmarks (axe's moderate `landmark-one-main` and `region`). The demo data of `make dev` (seed_demo), signed in
as its two accounts. A failure prints each violation's rule, impact, help, the failing elements and why;
screenshots of the pages whose colours changed for axe go to var/screenshots/a11y-*.png."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import RequestFactory
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from access.services import roles
from clusters.inventory import sync_backend
from clusters.models import Backend
from configs.models import Revision
from kubesim import EmulatorServer
from pools.models import Pool
from quotas.models import NodePool
from selfservice.models import AccessRequest, PoolRequest
from tests.e2e.looks import DESKTOP, PHONE, SHOTS, axe_violations, describe_violations, sign_in_admin
from tests.e2e.test_submit_preview import sign_in
from tests.factories import TokenFactory
from tests.selfservice.conftest import PASSWORD
from tests.usage.factories import attempt_row
from usage.models import DeservedSample
from usage.services.rollup import floor_hour, roll_up

pytestmark = pytest.mark.heavy

LANDMARKS = ("landmark-one-main", "region")  # moderate, but the admin lacked them (issue #35): checked too
SUBMIT_POOL = "robotics-training"
OTHERS_POOL = "team-development"  # not the researcher's
H100 = "gpu-cluster-01-h100"
# pages whose colours changed for axe: a screenshot at both widths for a person to look at
SHOT = {"catalog", "pool", "submit-preview", "admin-dashboard", "admin-pool-change", "admin-usage"}


@pytest.fixture
def demo(live_server, transactional_db, monkeypatch):
    """`make dev`'s data: seed_demo's pools and accounts (admin, researcher; tests' PASSWORD), the inventory of
    a simulated cluster, a day of recorded use in the H100 node pool, the researcher's requests and a token."""
    roles.ensure_builtin_roles()  # a transactional test's flush removed the migration's roles
    monkeypatch.setenv("DEMO_ADMIN_PASSWORD", PASSWORD)
    monkeypatch.setenv("DEMO_RESEARCHER_PASSWORD", PASSWORD)
    with EmulatorServer(host="127.0.0.1", port=0, fleet="demo") as cluster:
        monkeypatch.setenv("DEMO_CLUSTER_URL", cluster.url)
        call_command("seed_demo", stdout=StringIO(), stderr=StringIO())
        for backend in Backend.objects.all():
            sync_backend(backend.pk)
        researcher = get_user_model().objects.get(username="researcher")
        AccessRequest.objects.create(
            requester=researcher, pool=Pool.objects.get(name=OTHERS_POOL), justification="evaluation runs"
        )
        PoolRequest.objects.create(requester=researcher, team="robotics", hardware="H100", gpus=8, purpose="grasping")
        TokenFactory(user=researcher, name="nightly-evaluation")
        recorded_day()
        yield cluster


def recorded_day() -> None:
    """A day of robotics and vision attempts in the H100 node pool, with their hourly guarantees, rolled up."""
    first = floor_hour(timezone.now()) - timedelta(days=1)
    for hour in range(24):
        at = first + timedelta(hours=hour)
        for project, deserved, gpus in (("robotics", 16, 8), ("vision", 8, 4)):
            DeservedSample.objects.create(
                hour=at, node_pool=H100, project=project, department="research", gpu_deserved=deserved
            )
            attempt_row(
                project=project, department="research", pool=SUBMIT_POOL, node_pool=H100, gpu=gpus, started_at=at,
                ended_at=at + timedelta(minutes=50), hourly_cost_micros=gpus * 12_290_000,
            )  # fmt: skip
    roll_up(now=timezone.now())


class Audit:
    """axe on each page one browser page visits; what it found kept per page view in `found`, printed at the end."""

    def __init__(self, page, base: str, found: dict[str, list[dict]]) -> None:
        self.page, self.base, self.found = page, base, found
        self.audited = 0

    def visit(self, name: str, path: str, ready: str | None = None) -> None:
        response = self.page.goto(f"{self.base}{path}")
        assert response.status < 400, f"{name}: {path} answered {response.status}"
        if ready:
            self.page.wait_for_selector(ready)
        self.check(name)

    def check(self, name: str) -> None:
        width = self.page.viewport_size["width"]
        violations = axe_violations(self.page, also=LANDMARKS)
        self.audited += 1
        if violations:
            self.found[f"{name} at {width} px ({self.page.url})"] = violations
        if name in SHOT:
            self.page.screenshot(path=str(SHOTS / f"a11y-{name}-{width}.png"), full_page=True)

    def at_width(self, width: int) -> None:
        self.page.set_viewport_size({"width": width, "height": 844 if width == PHONE else 900})


@pytest.mark.django_db(transaction=True)
def test_every_page_passes_axe(page, new_page, live_server, demo):
    """One test for both people: the demo's seed is the slow part. All of it is audited before the verdict."""
    found: dict[str, list[dict]] = {}
    SHOTS.mkdir(parents=True, exist_ok=True)
    researcher, admin = Audit(page, live_server.url, found), Audit(new_page(), live_server.url, found)
    researcher_pages(researcher)
    admin_pages(admin)
    print(f"axe: {researcher.audited + admin.audited} page views audited; screenshots in {SHOTS}")
    assert not found, "axe found:\n" + describe_violations(found)


def researcher_pages(audit: Audit) -> None:
    """Signed out, then as the researcher: every page at 1440 and 390 px; one workflow submitted on the way."""
    page, base = audit.page, audit.base
    pools = sorted(Pool.objects.values_list("name", flat=True))
    for width in (DESKTOP, PHONE):
        audit.at_width(width)
        page.context.clear_cookies()
        audit.visit("login", "/login/", ready="#login-form")
        sign_in(page, base, "researcher")
        audit.check("catalog")
        # the researcher's pools and the others' (access denied, with a way to ask); on a phone, one of each
        for name in pools if width == DESKTOP else (SUBMIT_POOL, OTHERS_POOL):
            audit.visit("pool" if name == SUBMIT_POOL else f"pool {name}", f"/pools/{name}/")
        audit.visit("submit", f"/pools/{SUBMIT_POOL}/submit/", ready="#spec-editor-code .cm-content")
        page.wait_for_function("() => window.htmx !== undefined")
        page.click("#preview-button")
        page.wait_for_selector("#verdict-main")
        audit.check("submit-preview")
        if width == DESKTOP:  # one workflow, then its page at both widths
            page.click("#submit-workflow")
            page.wait_for_url(f"{base}/workflows/*/")
            workflow = page.url[len(base) :]
        audit.visit("workflow", workflow, ready="#workflow-status-badge")
        for name, path in (("workflows", "/workflows/"), ("requests", "/requests/"), ("tokens", "/tokens/")):
            audit.visit(name, path)
        audit.visit("profile", "/profile/")


def admin_pages(audit: Audit) -> None:
    """Signed out, then as the admin, at 1440 px: every list and form and our own pages; at 390 px the dashboard,
    a pool's form, the usage page and every list."""
    page, base = audit.page, audit.base
    audit.at_width(DESKTOP)
    audit.visit("admin-login", "/admin/login/")
    sign_in_admin(page, base, "admin")
    audit.visit("admin-dashboard", "/admin/", ready="#dashboard")
    for name, path, ready in model_pages() + own_pages():
        audit.visit(name, path, ready)
    grid = reverse("admin:quotas_nodepool_quotas", args=[NodePool.objects.get(name=H100).pk])
    audit.visit("admin-quota-grid", grid, ready="#quota-totals")
    page.fill('input[name="project:vision:gpu:deserved"]', "12")
    page.click("#preview-button")
    page.wait_for_selector("#what-if-right-now")
    audit.check("admin-what-if-preview")
    audit.at_width(PHONE)
    phone = [
        ("admin-dashboard", "/admin/", "#dashboard"),
        ("admin-pool-change", admin_url(Pool, "change", Pool.objects.get(name=SUBMIT_POOL).pk), "[data-node-match]"),
        ("admin-usage", "/admin/usage/usagerollup/", "#chart-cost"),
    ]
    # every list again (the usage page is one), each row a card of its own on a phone
    listed = {path for _, path, _ in phone}
    phone += [page for page in model_pages() if page[0].endswith("-list") and page[1] not in listed]
    for name, path, ready in phone:
        audit.visit(name, path, ready)


def admin_url(model, view: str, *args) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def model_pages() -> list[tuple[str, str, str | None]]:
    """Every registered model's list, and its first object's change form (the add form when it has none)."""
    request = RequestFactory().get("/admin/")
    request.user = get_user_model().objects.get(username="admin")
    ready = {Pool: "[data-node-match]"}  # the nodes its platforms take, loaded after the page
    pages = []
    for model, model_admin in sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label):
        label = f"admin-{model._meta.model_name}"
        try:
            pages.append((f"{label}-list", admin_url(model, "changelist"), None))
        except NoReverseMatch:
            continue  # registered without a list of its own
        first = model_admin.get_queryset(request).order_by("pk").first()
        if model is Pool:
            first = Pool.objects.get(name=SUBMIT_POOL)  # the pool the researcher submits to
        if first is not None:
            pages.append((f"{label}-change", admin_url(model, "change", first.pk), ready.get(model)))
        elif model_admin.has_add_permission(request):
            pages.append((f"{label}-add", admin_url(model, "add"), None))
    return pages


def own_pages() -> list[tuple[str, str, str | None]]:
    """The admin pages of ours beside the models' lists and forms."""
    pool = Pool.objects.get(name=SUBMIT_POOL)
    h100 = NodePool.objects.get(name=H100)
    revision = Revision.objects.filter(revision__gt=1).order_by("pk").first()
    backend = Backend.objects.order_by("pk").first()
    preview = reverse("admin:pools_pool_preview", args=[pool.pk])
    return [
        ("admin-usage", "/admin/usage/usagerollup/", "#chart-cost"),
        ("admin-fairshare", reverse("admin:quotas_nodepool_fairshare", args=[h100.pk]), "#fairshare-chart"),
        ("admin-projects-grid", reverse("admin:quotas_nodepool_projects"), "#project-grid"),
        ("admin-pod-preview", f"{preview}?platform={pool.default_platform}&task=train&gpu=1", "#preview-task-train"),
        ("admin-revision-diff", f"{admin_url(Revision, 'change', revision.pk)}?compare=1", "#diff-table"),
        ("admin-sync-confirm", f"{admin_url(Backend, 'change', backend.pk)[: -len('change/')]}sync-inventory/", None),
        ("admin-explain", reverse("admin:access_explain"), None),
        ("admin-history", admin_url(Pool, "history", pool.pk), None),
    ]
