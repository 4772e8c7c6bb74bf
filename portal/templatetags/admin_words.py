"""Admin wording for people: names are shown as they are written.

Unfold's breadcrumbs and page headers capitalise every part (`capfirst`), which turned the pool
`heterogeneous_pool` into "Heterogeneous_pool" and the role `osmo-admin` into "Osmo-admin". Titles made of
words (an app's or a model's verbose name) are still capitalised; an object is shown as its `str`, untouched.
"""

from __future__ import annotations

from django import template
from django.db.models import Model
from django.utils.text import capfirst

register = template.Library()


@register.filter
def title_part(value):
    """`capfirst` for a verbose name, the object's own name for an object."""
    return str(value) if isinstance(value, Model) else capfirst(value)
