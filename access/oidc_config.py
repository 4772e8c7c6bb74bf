"""Whether OIDC sign-in is on: a settings read, importable without the OIDC client stack.

`access.oidc` pulls in PyJWT (and `cryptography`), requests and mozilla-django-oidc; the sign-in throttle,
which app loading imports, and the login page only need to know whether OIDC is configured.
"""

from __future__ import annotations

from django.conf import settings


def oidc_enabled() -> bool:
    return bool(getattr(settings, "OIDC_ISSUER", ""))
