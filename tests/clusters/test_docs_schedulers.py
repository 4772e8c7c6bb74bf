"""docs/quota-schedulers.md: its example tree runs as written and every object the page shows is exactly what
the translation produces; its sample refusal and name are the real ones."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from clusters.schedulers import SchedulerObjectInvalid, kai, kueue, pod_routing, validate
from clusters.schedulers.tree import object_name

PAGE = Path(__file__).resolve().parents[2] / "docs" / "quota-schedulers.md"


def page_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(), re.S)


def example_tree():
    [code] = page_blocks("python")
    scope: dict = {}
    exec(compile(code, str(PAGE), "exec"), scope)  # noqa: S102 - the page's own example
    return scope


def key(obj: dict) -> tuple:
    return obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"]


def test_every_object_shown_is_what_the_translation_produces():
    scope = example_tree()
    tree = scope["tree"]
    produced = {key(o): o for o in [*kai.queues(tree), *kueue.objects(tree)]}
    shown = [doc for block in page_blocks("yaml") for doc in yaml.safe_load_all(block)]
    assert len(shown) == 7
    for doc in shown:
        assert doc == produced[key(doc)], key(doc)
    assert len(kai.queues(tree)) == 6 and len(kueue.objects(tree)) == 8  # as the page says
    assert [o["metadata"]["name"] for o in kueue.cohorts(tree)] == ["gpu-cluster-root", "research"]
    for obj in produced.values():
        validate(obj)
    speech = produced["ClusterQueue", None, "speech"]["spec"]
    assert speech["fairSharing"] == {"weight": 1}
    a100 = next(f for f in speech["resourceGroups"][0]["flavors"] if f["name"] == "a100")
    assert a100["resources"][2] == {"name": "nvidia.com/gpu", "nominalQuota": 4, "lendingLimit": 0}  # as it says
    assert pod_routing("kai", "vision", scope["node_pools"][1]) == (
        "kai-scheduler",
        {"kai.scheduler/queue": "a100-vision", "kai.scheduler/node-pool": "a100"},
    )


def test_the_pages_sample_refusal_and_name_are_real():
    tree = example_tree()["tree"]
    vision = copy.deepcopy(next(q for q in kai.queues(tree) if q["metadata"]["name"] == "a100-vision"))
    vision["spec"]["resources"]["gpu"]["quota"] = "eight"
    with pytest.raises(SchedulerObjectInvalid) as caught:
        validate(vision)
    text = PAGE.read_text()
    assert f"`{caught.value.reason}`" in text and f"`{caught.value.field}`" in text
    assert f"`Inference_Team` → `{object_name('Inference_Team')}`" in text
