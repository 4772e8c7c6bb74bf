"""The submit page's code editor: the spec field is the editor's textarea, and a refused spec names the line
the editor marks (the parser's position, the field's path in the text, or the refused task's name)."""

from __future__ import annotations

import re

import pytest

from portal.widgets import EDITOR_SCRIPT
from tests.selfservice.conftest import TRAINING
from tests.selfservice.test_pages import HX, SPEC

pytestmark = pytest.mark.django_db


def marked_lines(html: str) -> list[int]:
    return [int(line) for line in re.findall(r'data-error-for="spec-editor" data-line="(\d+)"', html)]


def preview(world, spec: str) -> str:
    client = world.client(world.researcher)
    response = client.post(f"/pools/{TRAINING}/submit/preview/", {"spec": spec, "priority": "NORMAL"}, **HX)
    assert response.status_code == 200
    return response.content.decode()


def test_the_submit_page_loads_the_editor_and_marks_the_example_it_shows(demo_world):
    html = demo_world.client(demo_world.researcher).get(f"/pools/{TRAINING}/submit/?example=group").content.decode()
    assert re.search(r'<textarea[^>]*data-code-editor="yaml"[^>]*id="spec-editor"', html)
    assert f"/static/{EDITOR_SCRIPT}" in html and "/static/portal/submit.js" in html
    assert '<div id="editor-wrap" class="editor" data-example="group">' in html
    assert re.search(r'aria-pressed="true"[^>]*\n?[^>]*data-example="group"', html)
    assert html.count('aria-pressed="true"') == 1
    assert 'data-busy-label="Previewing…"' in html and 'data-busy-label="Submitting…"' in html
    assert '<main class="wide">' in html


@pytest.mark.parametrize(
    ("spec", "line"),
    [
        ("version: 2\nworkflow:\n  name: x\n  tasks: [\n", 5),  # the parser's position
        (SPEC.replace("image: nvcr.io/nvidia/pytorch:24.01-py3", "imag: x"), 8),  # the unknown key
        (SPEC.replace("memory: 64Gi", "memory: lots"), 5),  # the path: workflow.resources.default.memory
        (SPEC.replace("name: train-resnet", "name: Bad_Name"), 3),
    ],
)
def test_a_refused_spec_marks_its_line(demo_world, spec, line):
    html = preview(demo_world, spec)
    assert marked_lines(html) == [line]
    assert 'data-clear-on-edit="spec-editor"' in html  # the box goes once the spec changes
    assert f'class="error-line small" href="#spec-editor" data-line="{line}">line {line}</a>' in html


def test_a_task_refused_by_its_platform_is_marked_at_its_name(demo_world):
    html = preview(demo_world, SPEC.replace("gpu: 2", "gpu: 0"))
    assert "A task cannot run on its platform" in html
    assert set(marked_lines(html)) == {7}  # each problem at `- name: train`, not at the workflow's name


def test_a_refused_submission_re_renders_the_editor_with_the_line_and_no_example_chosen(demo_world):
    client = demo_world.client(demo_world.researcher)
    spec = SPEC.replace("name: train-resnet", "name: Bad_Name")
    response = client.post(f"/pools/{TRAINING}/submit/", {"spec": spec, "priority": "NORMAL"})
    assert response.status_code == 400
    html = response.content.decode()
    assert marked_lines(html) == [3] and "Bad_Name" in html
    assert '<div id="editor-wrap" class="editor" data-example="">' in html  # the text is the user's own
    assert 'aria-pressed="true"' not in html
