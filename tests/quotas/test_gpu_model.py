"""Reasons name a node pool's GPUs as people do ("16 of 16 guaranteed A100 GPUs"): the short model of the one
GPU product its usable nodes carry (quotas.services.capacity.short_model, gpu_models)."""

import pytest

from quotas.services.capacity import short_model
from quotas.services.state import gpu_noun


@pytest.mark.parametrize(
    ("product", "model"),
    [
        ("NVIDIA-A100-SXM4-80GB", "A100"),
        ("NVIDIA-H100-80GB-HBM3", "H100"),
        ("NVIDIA-GB200", "GB200"),
        ("Tesla-T4", "T4"),
        ("Tesla V100-SXM2-16GB", "V100"),
        ("NVIDIA", "NVIDIA"),
    ],
)
def test_short_model(product, model):
    assert short_model(product) == model


def test_noun_falls_back_to_gpus_when_the_models_differ():
    assert (gpu_noun("A100"), gpu_noun("")) == ("A100 GPUs", "GPUs")
