"""`{% sparkline values label %}`: an inline SVG line of `values` (portal.sparklines), with `label` for screen
readers and as its tooltip."""

from __future__ import annotations

from django import template
from django.utils.html import format_html

from portal.sparklines import sparkline as points_of

register = template.Library()


@register.simple_tag
def sparkline(values, label: str = ""):
    line = points_of(list(values or ()))
    if not line.points:
        return ""
    x, y = line.last
    return format_html(
        '<svg class="spark" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{label}" '
        'data-points="{n}"><title>{label}</title>'
        '<polyline points="{points}" fill="none" stroke="currentColor" stroke-width="1.5" '
        'stroke-linejoin="round" stroke-linecap="round"/>'
        '<circle cx="{x}" cy="{y}" r="2" fill="currentColor"/></svg>',
        w=line.width,
        h=line.height,
        label=label,
        n=len(line.points),
        points=line.polyline,
        x=f"{x:g}",
        y=f"{y:g}",
    )
