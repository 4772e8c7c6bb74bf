"""Admin wording for people: names are shown as they are written.

Unfold's breadcrumbs and page headers capitalise every part (`capfirst`), which turned the pool
`heterogeneous_pool` into "Heterogeneous_pool" and the role `osmo-admin` into "Osmo-admin". Titles made of
words (an app's or a model's verbose name) are still capitalised; an object is shown as its `str`, untouched.
"""

from __future__ import annotations

from datetime import timedelta

from django import template
from django.db.models import Model
from django.utils import timezone
from django.utils.text import capfirst
from django.utils.timesince import timesince

register = template.Library()


@register.filter
def title_part(value):
    """`capfirst` for a verbose name, the object's own name for an object."""
    return str(value) if isinstance(value, Model) else capfirst(value)


@register.filter
def ago(moment) -> str:
    """ "just now" within the minute, else "5 minutes ago" (Django's timesince says "0 minutes")."""
    if not moment:
        return ""
    if timezone.now() - moment < timedelta(minutes=1):
        return "just now"
    return f"{timesince(moment)} ago"
