"""The portal's release (pyproject.toml's `version`; a test keeps the two equal), and the OSMO client release
whose requests the portal answers (docs/osmo-cli.md)."""

from __future__ import annotations

VERSION = "0.1.0"
OSMO_CLIENT_VERSION = "6.4"


def as_osmo_version() -> dict[str, str]:
    """`GET /api/version` in OSMO's shape (src/lib/utils/version.py `Version`: `major`, `minor`, `revision`,
    `hash`, all strings; `osmo version` prints `major.minor.revision`), plus the portal's own fields."""
    major, minor, revision = VERSION.split(".")
    return {
        "major": major,
        "minor": minor,
        "revision": revision,
        "hash": "",
        "product": "Pool Portal",
        "osmo_client": OSMO_CLIENT_VERSION,
    }
