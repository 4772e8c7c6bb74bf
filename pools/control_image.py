"""The image of OSMO's control container (`osmo-ctrl`) on a backend, for the templates that name none.

OSMO's own `default_ctrl` template gives `osmo-ctrl` only resources: OSMO's service fills its image in. The
portal does the same at resolution (pools.engine.resolve, `WorkflowContext.control_image`), with the image of
the pool's backend: its `control_image`, else the OSMO_CTRL_IMAGE setting, else OSMO's default
(pools.engine.defaults.OSMO_CTRL_IMAGE). The source is what the preview's provenance says.
"""

from __future__ import annotations

from django.conf import settings

from pools.engine.defaults import OSMO_CTRL_IMAGE


def control_image(backend) -> dict[str, str]:
    """`{"control_image", "control_image_source"}` for a WorkflowContext on `backend` (a Backend row, or one
    loaded with `name` and `control_image`)."""
    if backend.control_image:
        source = f"backend {backend.name}'s control_image"
        return {"control_image": backend.control_image, "control_image_source": source}
    if settings.OSMO_CTRL_IMAGE:
        return {"control_image": settings.OSMO_CTRL_IMAGE, "control_image_source": "the OSMO_CTRL_IMAGE setting"}
    return {"control_image": OSMO_CTRL_IMAGE, "control_image_source": "the default control image"}
