"""Small inline SVG sparklines, rendered on the server (no JavaScript, no chart library): the admin dashboard's
key numbers and the fair-share page's per-project GPUs over the last 24 hours (docs/admin.md, "Dashboards").

Foundation: a pure function of a list of numbers; `{% sparkline values %}` (portal.templatetags.sparklines)
draws it. The line spans the box; its lowest value sits on the bottom edge only when it is 0 (the scale starts at
0, so a flat line of 5 GPUs is not drawn as an empty one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WIDTH, HEIGHT, PAD = 120, 24, 2


@dataclass(frozen=True)
class Sparkline:
    values: tuple[float, ...]
    points: tuple[tuple[float, float], ...]  # (x, y) in the SVG's box, one per value
    width: int = WIDTH
    height: int = HEIGHT

    @property
    def polyline(self) -> str:
        return " ".join(f"{x:g},{y:g}" for x, y in self.points)

    @property
    def last(self) -> tuple[float, float] | None:
        return self.points[-1] if self.points else None

    @property
    def peak(self) -> float:
        return max(self.values, default=0)


def sparkline(values: Sequence[float], width: int = WIDTH, height: int = HEIGHT) -> Sparkline:
    """Points for `values`, oldest first, on a scale from 0 to their peak (at least 1)."""
    values = tuple(float(v) for v in values)
    top = max([1.0, *values])
    step = (width - 2 * PAD) / max(1, len(values) - 1)
    points = tuple(
        (round(PAD + index * step, 2), round(height - PAD - (height - 2 * PAD) * value / top, 2))
        for index, value in enumerate(values)
    )
    return Sparkline(values, points, width, height)
