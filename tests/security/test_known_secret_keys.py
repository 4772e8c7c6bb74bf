"""Every secret key ever published in the repository is refused in production (issue #31 point 7).

The keys below are public already (they are in the git history); the portal keeps only their digests.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import subprocess
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from portal import deployment
from tests.security.test_production_settings import production, run

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED_KEYS = [  # from `git log -p --all -S SECRET_KEY`, docs and deploy examples
    "dev-only-insecure-key-set-SECRET_KEY-in-production",  # 50 characters: passed Django's weak-key test
    "build-only-not-a-secret",
    "hunter2",
    "a-new-secret-key",
    "the-old-secret-key",
    "x9Fq2LmZ7vR4tB8nW1cK6yH3pJ5sD0gA-uE_oI7rT2wQ9zX4cV8bN1mL6kJ3hG5f",  # 64 random-looking characters
    "pool-portal-test-client-secret-0123456789",
    "test-secret",
]
# A literal given to SECRET_KEY: assigned, a dict or YAML value, a keyword argument (quoted); and in shell,
# the Containerfile and docs also an unquoted assignment (not a `$(...)` substitution).
QUOTED = re.compile(r"""SECRET_KEY["']?\s*[:=]\s*["']([^"'$\s][^"']*)["']""")
UNQUOTED = re.compile(r"""SECRET_KEY=([^\s"'$;\\)]+)""")


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@pytest.mark.parametrize("key", PUBLISHED_KEYS)
def test_each_published_key_is_refused(key):
    with pytest.raises(ImproperlyConfigured, match="published in the portal's repository") as refusal:
        deployment.refuse_weak_key(key)
    assert key not in str(refusal.value)


def test_the_code_keeps_digests_not_keys():
    assert {digest(key) for key in PUBLISHED_KEYS} == deployment.KNOWN_KEY_DIGESTS
    source = (ROOT / "portal" / "deployment.py").read_text()
    assert not [key for key in PUBLISHED_KEYS if key in source]


def test_a_fresh_random_key_is_accepted():
    deployment.refuse_weak_key(secrets.token_urlsafe(50))


def test_production_refuses_the_old_default_at_start(tmp_path):
    """The one published key long and varied enough to pass Django's test: refused by the process."""
    process = run(["manage.py", "check"], tmp_path, **production(SECRET_KEY=PUBLISHED_KEYS[0]))
    assert process.returncode != 0
    assert "SECRET_KEY is a key published in the portal's repository" in process.stderr
    assert PUBLISHED_KEYS[0] not in process.stderr


def literal_keys(path: Path) -> set[str]:
    text = path.read_text(errors="replace")
    found = set(QUOTED.findall(text))
    if path.suffix != ".py":
        found |= set(UNQUOTED.findall(text))
    return {key for key in found if key.strip()}


def test_every_key_literal_in_the_tree_is_known():
    """A key someone adds to a doc, manifest or test is refused too, or this fails naming it."""
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    paths = [ROOT / name for name in listed.stdout.splitlines() if (ROOT / name).is_file()]
    literals = {(key, path.name) for path in paths for key in literal_keys(path)}
    assert any(name == "Containerfile" for _, name in literals)  # the scan does see the build-only key
    unknown = sorted((name, key) for key, name in literals if digest(key) not in deployment.KNOWN_KEY_DIGESTS)
    assert not unknown, f"SECRET_KEY literals whose digest is not in deployment.KNOWN_KEY_DIGESTS: {unknown}"
