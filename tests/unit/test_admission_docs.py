"""docs/admission.md's worked example runs as written (its ```python block)."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "admission.md"


def test_the_worked_example_runs_as_written():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert blocks, "docs/admission.md has no python example"
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), {})  # noqa: S102 - our own documentation
