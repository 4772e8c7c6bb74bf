"""The portal's release is written once for the code (`portal.version`) and once for packaging (pyproject.toml):
they must agree, and `GET /api/version` answers it in OSMO's shape."""

from __future__ import annotations

import tomllib
from pathlib import Path

from django.conf import settings

from portal.version import VERSION, as_osmo_version

ROOT = Path(__file__).resolve().parents[2]


def test_the_version_is_pyprojects():
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"] == VERSION
    assert settings.SPECTACULAR_SETTINGS["VERSION"] == VERSION


def test_the_osmo_shape_has_the_fields_osmos_client_requires():
    shape = as_osmo_version()
    assert ".".join([shape["major"], shape["minor"], shape["revision"]]) == VERSION
    assert all(isinstance(shape[key], str) for key in ("major", "minor", "revision", "hash"))
