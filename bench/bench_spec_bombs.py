"""How long refusing a spec bomb takes (issue #18 items 1, 2, 7), in-process through Django's test client
against a throwaway database: each bomb of tests/security/bombs.py POSTed as YAML to the REST API and, as the
submit page's form posts it (multipart/form-data: its enctype and hx-encoding; encoded before the timing), to
the self-service preview page (without htmx's HX-Request header: the whole page, whose refusal is a 400, not
the 200 fragment htmx swaps in); and the template expression that would print 30 million items saved into a
pool's configuration (PUT /api/configs/pool/<name>; then the render alone, to tell the sandbox's refusal from
the rest of saving a pool). Every request must answer 400 (checked each time); a page row's note says whether
the page's own error answered or Django's bare 400. A form over DATA_UPLOAD_MAX_MEMORY_SIZE is refused unread
(portal.form_limits): the last page row times that with a 3 MB spec.

Target ≤ 100 ms each: before the fix the 30-level merge-key bomb held a worker for minutes and the
60,000-task spec took 8 s. tests/security/test_spec_bombs.py checks, without a clock, what each refusal
answers and that it stops before expanding the bomb.
"""

from __future__ import annotations

import logging

from bench.django_env import throwaway_database
from bench.harness import Row, measure
from tests.security.bombs import BOMBS, ORDINARY, TEMPLATE

TARGET = "≤ 100 ms"
RUNS = 20
BOUNDARY = "BenchBoundary"
FORM = f"multipart/form-data; boundary={BOUNDARY}"  # what the page's form sends, with or without htmx
OVERSIZED = "3 MB spec, over DATA_UPLOAD_MAX_MEMORY_SIZE"


def _refused(response) -> None:
    assert response.status_code == 400, (response.status_code, response.content[:300])


def run() -> list[Row]:
    with throwaway_database():  # Django's logging is configured from here on
        quiet = {name: logging.getLogger(name) for name in ("django.request", "django.security")}
        levels = {name: logger.level for name, logger in quiet.items()}
        for logger in quiet.values():  # a line (or a traceback) per refusal otherwise
            logger.setLevel(logging.CRITICAL)
        try:
            return _measure()
        finally:
            for name, logger in quiet.items():
                logger.setLevel(levels[name])


def _measure() -> list[Row]:
    from django.test import Client
    from rest_framework.test import APIClient

    api, page, admin = _set_up(APIClient, Client)
    ordinary = api.post("/api/pool/batch/workflow?validation_only=true", ORDINARY, content_type="application/yaml")
    assert ordinary.status_code == 200, ordinary.content  # the same head with one task is accepted
    rows = []
    for name, bomb in BOMBS.items():
        rows.append(
            measure(
                f"refuse spec bomb via API: {name}",
                lambda bomb=bomb: _refused(
                    api.post("/api/pool/batch/workflow", bomb.text, content_type="application/yaml")
                ),
                runs=RUNS,
                target=TARGET,
                note=f"{len(bomb.text) / 1024:.0f} KiB" if len(bomb.text) > 4096 else f"{len(bomb.text)} B",
            )
        )
    from django.test.client import encode_multipart

    pages = {name: bomb.text for name, bomb in BOMBS.items()}
    pages[OVERSIZED] = "# " + "x" * 3_000_000 + "\n"
    for name, text in pages.items():
        form = encode_multipart(BOUNDARY, {"spec": text, "priority": "NORMAL"})  # once, outside the timing

        def preview(form=form):
            return page.post("/pools/batch/submit/preview/", form, content_type=FORM)

        row = measure(
            f"refuse spec bomb via preview page: {name}",
            lambda preview=preview: _refused(preview()),
            runs=RUNS,
            target=TARGET,
        )
        shown = "the page's error" if b"The spec has a mistake" in preview().content else "Django's bare 400"
        row.note = f"{shown}, form {len(form) / 1024:.0f} KiB"
        rows.append(row)
    from configs import store

    body = store.show("POOL", "batch")
    body["platforms"]["cpu"]["override_pod_template"] = ["cpu", "expensive"]
    rows.append(
        measure(
            "refuse a pool whose template prints 30M items",
            lambda: _refused(admin.put("/api/configs/pool/batch", {"configs": body}, format="json")),
            runs=RUNS,
            target=TARGET,
            note=TEMPLATE,
        )
    )
    from pools.engine.sandbox import SandboxError, compile_string, render_context, render_string

    def render() -> None:
        try:
            render_string(compile_string(TEMPLATE), render_context({}))
        except SandboxError:
            return
        raise AssertionError("the template was rendered")

    rows.append(measure("refuse the template alone, pools.engine.sandbox", render, runs=200, target=TARGET))
    return rows + _template_rows(api, page, admin)


def _template_rows(api, page, admin) -> list[Row]:
    """Issue #31 items 1-2: each template bomb (tests/security/template_bombs.py) as a spec's dry run, in the
    preview page's form, and as a pod template an admin saves; then the largest template the bounds accept
    (pools.engine.template_bounds), compiled, for what an accepted one may still cost."""
    from django.test.client import encode_multipart

    from tests.security.template_bombs import TEMPLATE_BOMBS

    rows = []
    for name, bomb in TEMPLATE_BOMBS.items():
        text, form = bomb.spec(), encode_multipart(BOUNDARY, {"spec": bomb.spec(), "priority": "NORMAL"})
        body = {"configs": {"metadata": {"labels": {"x": bomb.expression}}}}
        doors = {
            "API dry run": lambda text=text: api.post(
                "/api/pool/batch/workflow?dry_run=true", text, content_type="application/yaml"
            ),
            "preview page": lambda form=form: page.post("/pools/batch/submit/preview/", form, content_type=FORM),
            "pod template save": lambda body=body: admin.put("/api/configs/pod_template/bomb", body, format="json"),
        }
        size = f"{len(bomb.expression) / 1024:.0f} KiB" if len(bomb.expression) > 4096 else f"{len(bomb.expression)} B"
        for door, call in doors.items():
            rows.append(
                measure(
                    f"refuse template bomb via {door}: {name}",
                    lambda call=call: _refused(call()),
                    runs=RUNS,
                    target=TARGET,
                    note=f"expression {size}",
                )
            )
    return rows + [_largest_accepted()]


def _largest_accepted() -> Row:
    """A template at the bounds: expressions of 10 filters each, as many as the size bound lets through."""
    from pools.engine.sandbox import SandboxError, check_bounds, compile_template

    expression = "{{ z" + "|list" * 10 + " }}\n"
    count = 1
    while True:  # the most the bounds accept
        try:
            check_bounds(expression * (count + 1))
        except SandboxError:
            break
        count += 1
    source = expression * count
    return measure(
        "compile the largest template the bounds accept",
        lambda: compile_template(source),
        runs=RUNS,
        note=f"{count} expressions of 10 filters, {len(source)} B (accepted: no target; was unbounded)",
    )


def _set_up(api_client, page_client):
    from access.services import roles
    from configs import store
    from configs.revisions import Actor
    from pools.engine import default_templates
    from tests.factories import RoleFactory, UserFactory

    actor = Actor(name="bench", source="cli")
    store.apply("BACKEND", "bench-cluster", {"description": "bench", "namespace": "bench"}, actor)
    store.apply_many(
        "POD_TEMPLATE",
        {
            "default_user": default_templates()["default_user"],
            "cpu": {"spec": {"nodeSelector": {"hive.openshift.io/machine-pool": "cpu"}}},
            "expensive": {"metadata": {"labels": {"x": TEMPLATE}}},
        },
        actor,
    )
    store.apply(
        "POOL",
        "batch",
        {
            "backend": "bench-cluster",
            "default_platform": "cpu",
            "common_pod_template": ["default_user"],
            "common_default_variables": {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi", "USER_STORAGE": "1Gi"},
            "platforms": {"cpu": {"override_pod_template": ["cpu"]}},
        },
        actor,
    )
    roles.ensure_builtin_roles()
    RoleFactory(
        name="osmo-batch", policies=[{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/batch*"]}]
    )
    researcher = UserFactory(username="researcher")
    roles.update_user_roles(researcher, add=["osmo-batch", "osmo-user"], actor=actor)
    admin_user = UserFactory(username="platform-admin")
    roles.update_user_roles(admin_user, add=["osmo-admin"], actor=actor)
    api, page, admin = api_client(), page_client(), api_client()
    api.force_authenticate(researcher)
    page.force_login(researcher)
    admin.force_authenticate(admin_user)
    return api, page, admin
