"""Deployment safety, called from portal/settings.py: the secret key and the HTTPS settings.

Two kinds of run:
- development, or the embedded kind: DEBUG=true, or a SQLite database (the default without
  DATABASE_URL). Without SECRET_KEY, a random key is generated once into `var/secret_key` (mode 0600)
  and reused, so sessions and encrypted secrets survive a restart and no two installations share a key.
  SQLite means one machine, so one key file serves every process.
- production: DEBUG=false with a database server (PostgreSQL), or declared with
  PORTAL_ENVIRONMENT=production (the deploy manifests set it), which also refuses DEBUG=true: a
  forgotten DEBUG in a deployment shows settings and stack traces to anyone. SECRET_KEY is required:
  several hosts must share one key, and a public constant key would let anyone forge sessions and,
  through FIELD_ENCRYPTION_KEYS' default, decrypt cluster credentials. A development key (Django's
  `django-insecure-` prefix, shorter than 50 characters or fewer than 5 distinct ones, what
  `check --deploy` calls weak) is refused as well, and so is every key that has ever been in the
  repository or its docs (KNOWN_KEY_DIGESTS: their SHA-256 digests, so this file republishes none).

The HTTPS settings (SSL redirect, HSTS, secure cookies; in settings.py) are on whenever DEBUG is false;
each can be turned off by its environment variable. See docs/configuration.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from portal.env import env_int, env_str

SECRET_KEY_FILE = "secret_key"
ENVIRONMENTS = ("", "development", "production")
HSTS_DEFAULT_SECONDS = 31_536_000  # one year, what `check --deploy` and the HSTS preload list expect
# SHA-256 of every secret that has been published in this repository's history, docs or deploy examples
# (`git log -p --all -S SECRET_KEY`): anyone with a clone knows them. Add the digest of any new one.
KNOWN_KEY_DIGESTS = frozenset(
    {
        "40f9199dd5b780b379165dd561282edd26f59750aa7ac618499e1f70d1a538a6",  # the old settings.py default
        "cf605986bc5f510c0b856b933ac6197a7780d60c641e18fe82b1733b13e8e408",  # Containerfile's build-only key
        "f52fbd32b2b3b86ff88ef6c490628285f482af15ddcb29541f94bcf526a3f6c7",  # a deploy-check test's literal
        "adead72075344e2b4678fb3ca56c4a106413867f2a32d11ece266c228a022bad",  # key-rotation tests
        "392d299127f97dd9d195f8a65ad1ef2507dc08aef797fd56edb2bfd5852162e5",  # key-rotation tests
        "97c5aa37985cac6185183bbc13c3d83dff10f6f3ccb678bdf98bac86f66b2254",  # production-settings tests' key
        "24d14dc04bf5ba9088529b7093583c4b19ff0aa203a2cc2b92e26a311c884e88",  # the OIDC tests' client secret
        "9caf06bb4436cdbfa20af9121a626bc1093c4f54b31c0fa937957856135345b6",  # the OIDC tests' client secret
    }
)


def is_embedded_default() -> bool:
    """The self-contained setup: a SQLite database (the default when DATABASE_URL is unset)."""
    url = env_str("DATABASE_URL").strip().lower()
    return not url or url.startswith("sqlite:")


def declared_environment() -> str:
    value = env_str("PORTAL_ENVIRONMENT").strip().lower()
    if value not in ENVIRONMENTS:
        raise ImproperlyConfigured(f"PORTAL_ENVIRONMENT={value!r}: expected production or development (or unset)")
    return value


def is_production(debug: bool) -> bool:
    return declared_environment() == "production" or not (debug or is_embedded_default())


def refuse_debug_in_production(debug: bool) -> None:
    if debug and declared_environment() == "production":
        raise ImproperlyConfigured(
            "DEBUG=true with PORTAL_ENVIRONMENT=production: refused, DEBUG shows settings and stack traces "
            "to every visitor. Unset DEBUG (or set DEBUG=false) in a production deployment."
        )


def secret_key(var_dir: Path, debug: bool) -> str:
    """SECRET_KEY from the environment; in development a key kept in var/; in production an error."""
    key = env_str("SECRET_KEY").strip()
    production = is_production(debug)
    if key:
        if production:
            refuse_weak_key(key)
        return key
    if not production:
        return _stored_key(var_dir / SECRET_KEY_FILE)
    raise ImproperlyConfigured(
        "SECRET_KEY is not set. With DEBUG=false and a database server (a production setup) the portal "
        "refuses to start without one: it signs sessions and, unless FIELD_ENCRYPTION_KEYS is set, "
        "encrypts cluster credentials. Generate one with: "
        "python3 -c 'import secrets; print(secrets.token_urlsafe(50))'"
    )


def refuse_weak_key(key: str) -> None:
    """Django's own test for a weak key (security.W009), made an error, plus the published keys."""
    if hashlib.sha256(key.encode()).hexdigest() in KNOWN_KEY_DIGESTS:
        raise ImproperlyConfigured(
            "SECRET_KEY is a key published in the portal's repository or docs: anyone can forge sessions "
            "with it. Refused in production. Generate one with: "
            "python3 -c 'import secrets; print(secrets.token_urlsafe(50))'"
        )
    if key.startswith("django-insecure-") or len(key) < 50 or len(set(key)) < 5:
        raise ImproperlyConfigured(
            "SECRET_KEY is a development key (a django-insecure- prefix, under 50 characters or under 5 "
            "distinct ones): refused in production. Generate one with: "
            "python3 -c 'import secrets; print(secrets.token_urlsafe(50))'"
        )


def _stored_key(path: Path) -> str:
    """Read the key at `path`, or create it (0600) once; safe when several processes start together."""
    with contextlib.suppress(FileNotFoundError):
        return _read_key(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w") as handle:
            handle.write(secrets.token_urlsafe(50) + "\n")
        with contextlib.suppress(FileExistsError):  # another process won the race: use its key
            os.link(draft, path)
    finally:
        draft.unlink()
    return _read_key(path)


def _read_key(path: Path) -> str:
    key = path.read_text().strip()
    if not key:
        raise ImproperlyConfigured(f"{path} is empty: delete it to generate a new key, or set SECRET_KEY")
    return key


def hsts_seconds(debug: bool) -> int:
    seconds = env_int("SECURE_HSTS_SECONDS", 0 if debug else HSTS_DEFAULT_SECONDS)
    if seconds < 0:
        raise ImproperlyConfigured(f"SECURE_HSTS_SECONDS={seconds}: expected 0 (off) or a number of seconds")
    return seconds


def proxy_ssl_header() -> tuple[str, str] | None:
    """`SECURE_PROXY_SSL_HEADER=HTTP_X_FORWARDED_PROTO` (value `https`), or `NAME=VALUE` for another value.

    Set it only behind a proxy that always sets (or strips) that header: otherwise a client could claim
    HTTPS for a plain HTTP request.
    """
    raw = env_str("SECURE_PROXY_SSL_HEADER").strip()
    if not raw:
        return None
    name, _, value = raw.partition("=")
    name, value = name.strip(), (value.strip() or "https")
    if not name.startswith("HTTP_") or not name[5:].replace("_", "").isalnum() or name != name.upper():
        raise ImproperlyConfigured(
            f"SECURE_PROXY_SSL_HEADER={raw!r}: expected a request.META header name such as "
            "HTTP_X_FORWARDED_PROTO (optionally =VALUE, default https)"
        )
    return name, value
