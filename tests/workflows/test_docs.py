"""docs/workflows-api.md and docs/workflows.md run as written: see tests/test_docs_examples.py, which runs
their bash blocks and error transcripts in a real shell against the demo data (tests/docs_runner.py)."""

from __future__ import annotations

from pathlib import Path

from tests.docs_runner import bash_blocks

ROOT = Path(__file__).resolve().parents[2]


def test_the_cli_examples_name_the_workflow_they_submitted():
    """No example depends on an id another section created: they capture the id a submit printed."""
    for page in ("workflows-api.md", "workflows.md"):
        text = "\n".join(bash_blocks(ROOT / "docs" / page))
        assert "hello-1" not in text, page
