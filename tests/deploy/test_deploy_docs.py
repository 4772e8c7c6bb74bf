"""docs/deploy.md's commands agree with the code: the secret's keys are settings the portal reads, and the
key one-liners make keys portal/secrets.py accepts (the derived one opens what the portal encrypted)."""

from __future__ import annotations

import re
import subprocess
import sys

from cryptography.fernet import Fernet

from portal import secrets
from tests.deploy.manifests import ROOT, settings_variables

PAGE = (ROOT / "docs" / "deploy.md").read_text()


def one_liner(start: str) -> str:
    """The Python code of the page's `python3 -c '…'` that begins with `start`."""
    (code,) = {code for code in re.findall(r"python3 -c '([^']*)'", PAGE) if code.startswith(start)}
    return code


def run(code: str, *args: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_the_secret_holds_the_settings_production_needs():
    keys = set(re.findall(r"--from-literal=([A-Z_]+)=", PAGE))
    assert keys == {"SECRET_KEY", "FIELD_ENCRYPTION_KEYS", "DATABASE_URL", "CELERY_BROKER_URL", "OIDC_CLIENT_SECRET"}
    assert keys <= settings_variables()


def test_the_generated_field_encryption_key_is_a_fernet_key():
    key = run(one_liner("import base64, os"))
    assert Fernet(key.encode()).decrypt(Fernet(key.encode()).encrypt(b"x")) == b"x"


def test_the_pinned_key_opens_what_the_secret_key_derived_one_encrypted(settings):
    settings.SECRET_KEY, settings.FIELD_ENCRYPTION_KEYS = "the-old-secret-key", []
    stored = secrets.encrypt("a cluster token")
    pinned = run(one_liner("import base64, hashlib"), "the-old-secret-key")
    settings.SECRET_KEY, settings.FIELD_ENCRYPTION_KEYS = "a-new-secret-key", [pinned]
    assert secrets.decrypt(stored) == "a cluster token"
