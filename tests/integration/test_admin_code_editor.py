"""The admin edits documents in the code editor (portal.widgets): the field renders as a textarea the script
upgrades, loads the bundled editor from /static/, and an error comes back at its line."""

from __future__ import annotations

import json
import re

import pytest
from django import forms
from django.urls import reverse

from pools.models import PodTemplate, ResourceValidation
from portal.widgets import EDITOR_SCRIPT, CodeBoundField, CodeEditor, line_error

pytestmark = pytest.mark.django_db


def textarea(html: str, name: str) -> str:
    return re.search(rf'<textarea[^>]*name="{name}"[^>]*>', html).group(0)


def errors_attribute(html: str, name: str) -> list[dict]:
    found = re.search(r'data-errors="([^"]*)"', textarea(html, name))
    return json.loads(found.group(1).replace("&quot;", '"')) if found else []


def test_the_widget_is_a_textarea_marked_for_the_editor_with_its_script():
    class Form(forms.Form):
        doc = forms.CharField(widget=CodeEditor("json"), bound_field_class=CodeBoundField)

    form = Form()
    html = str(form["doc"])
    assert html.startswith("<textarea") and 'data-code-editor="json"' in html and 'spellcheck="false"' in html
    assert EDITOR_SCRIPT in str(form.media)
    with pytest.raises(ValueError, match="language must be one of yaml, json"):
        CodeEditor("toml")


def test_an_error_with_a_line_reaches_the_editor_and_keeps_its_percent_signs():
    class Form(forms.Form):
        doc = forms.CharField(widget=CodeEditor(), bound_field_class=CodeBoundField)

        def clean_doc(self):
            raise line_error("must be below 100% (value: 120%)", 3)

    form = Form({"doc": "a: 1\nb: 2\nc: 120%\n"})
    assert not form.is_valid()
    assert form.errors["doc"] == ["line 3: must be below 100% (value: 120%)"]
    assert errors_attribute(str(form["doc"]), "doc") == [{"line": 3, "message": "must be below 100% (value: 120%)"}]


def test_the_pod_template_page_loads_the_editor(admin_client):
    html = admin_client.get(reverse("admin:pools_podtemplate_add")).content.decode()
    assert 'data-code-editor="yaml"' in textarea(html, "body")
    assert f"/static/{EDITOR_SCRIPT}" in html


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        ("spec:\n  nodeSelector: {a: b}\n  tolerations: [\n    x: y\n", 5, "invalid YAML"),
        ('{\n  "spec": {\n    "x": 1,\n    "x": 2\n  }\n}', 4, "appears twice"),
        ('{\n  "spec": {\n    "x": 1\n  ]\n}', 4, "invalid JSON"),
        ("spec:\n  nodeSelector: {a: b}\nspecs: {}\n", 3, "allowed top-level fields"),
        ("metadata: {}\nspec:\n  - 1\n", 2, "must be a mapping"),
    ],
)
def test_a_refused_pod_template_shows_the_error_at_its_line(admin_client, body, line, message):
    response = admin_client.post(reverse("admin:pools_podtemplate_add"), {"name": "bad", "body": body})
    assert response.status_code == 200
    [error] = response.context["adminform"].form.errors["body"]
    assert message in error
    shown = errors_attribute(response.content.decode(), "body")
    if line is None:
        assert shown == [] and not error.startswith("line ")
    else:
        assert error.startswith(f"line {line}: ") and [e["line"] for e in shown] == [line]
        assert message in shown[0]["message"] and not shown[0]["message"].startswith("document:")
    assert not PodTemplate.objects.filter(name="bad").exists()


def test_a_refused_validation_rule_is_marked_at_its_operator(admin_client):
    rules = (
        "- operator: LE\n  left_operand: '{{USER_GPU}}'\n  right_operand: '{{K8_GPU}}'\n  assert_message: ok\n"
        "- operator: ABOUT\n  left_operand: '{{USER_CPU}}'\n  right_operand: '1'\n  assert_message: cpu\n"
    )
    response = admin_client.post(reverse("admin:pools_resourcevalidation_add"), {"name": "bad", "rules": rules})
    assert response.status_code == 200
    [error] = response.context["adminform"].form.errors["rules"]
    assert error.startswith("line 5: ") and "unknown operator" in error
    assert errors_attribute(response.content.decode(), "rules")[0]["line"] == 5
    assert not ResourceValidation.objects.filter(name="bad").exists()


def test_a_refused_role_policy_is_marked_at_its_line(admin_client):
    policies = (
        "- effect: Allow\n  actions: ['workflow:Create']\n  resources: ['pool/robotics*']\n"
        "- actions:\n  - 'config:Read'\n  effect: Perhaps\n"
    )
    response = admin_client.post(
        reverse("admin:access_role_add"),
        {"name": "osmo-jugglers", "description": "", "policies": policies, "sync_mode": "import"},
    )
    assert response.status_code == 200
    [error] = response.context["adminform"].form.errors["policies"]
    assert error.startswith("line 6: ") and "Perhaps" in error
    assert errors_attribute(response.content.decode(), "policies")[0]["line"] == 6


def test_a_template_that_breaks_a_platform_s_pod_is_marked_where_the_template_says_it(admin_client, demo_pools):
    template = PodTemplate.objects.get(name="a100")
    body = "spec:\n  nodeSelector: {a: b}\n  tolerations: 5\n"
    response = admin_client.post(
        reverse("admin:pools_podtemplate_change", args=[template.pk]), {"name": "a100", "body": body}
    )
    assert response.status_code == 200
    [error] = response.context["adminform"].form.errors["body"]
    assert error.startswith("line 3: Not saved: platforms.") and "must be a list" in error
    assert errors_attribute(response.content.decode(), "body")[0]["line"] == 3
