"""docs/machine-pool-providers.md: its shell session runs as written (each block in turn, its writes committed
at the block's end, as `manage.py shell` commits each statement, so the pass queued on commit runs before the
next block), and prints what the page shows."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[3] / "docs" / "machine-pool-providers.md"


def blocks() -> list[tuple[str, str | None]]:
    """(python code, the text block right after it or None), in page order."""
    found = re.findall(r"```(python|text)\n(.*?)```", PAGE.read_text(), re.S)
    pairs = []
    for i, (kind, body) in enumerate(found):
        if kind == "python":
            after = found[i + 1] if i + 1 < len(found) else None
            pairs.append((body, after[1] if after and after[0] == "text" else None))
    return pairs


def test_the_shell_session_runs_as_written(db, django_capture_on_commit_callbacks):
    namespace: dict = {}
    pairs = blocks()
    assert len(pairs) == 7
    try:
        for code, expected in pairs:
            out = io.StringIO()
            with contextlib.redirect_stdout(out), django_capture_on_commit_callbacks(execute=True):
                exec(compile(code, str(PAGE), "exec"), namespace)  # noqa: S102 - the page's own example
            if expected is not None:
                assert out.getvalue() == expected, code
    finally:
        if "cloud" in namespace:
            namespace["cloud"].stop()
