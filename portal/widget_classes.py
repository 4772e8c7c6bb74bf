"""The CSS classes the portal's own admin widgets share with unfold's (inputs and selects look like its
own), and the portal's button classes (static/portal/admin-forms.css)."""

from __future__ import annotations

from unfold.widgets import INPUT_CLASSES, SELECT_CLASSES

INPUT = " ".join(INPUT_CLASSES)
SELECT = " ".join(SELECT_CLASSES)
BUTTON = "pp-button"
SECONDARY_BUTTON = "pp-button pp-button-secondary"
