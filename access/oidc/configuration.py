"""OIDC settings: whether sign-in is on, the client id, accepted algorithms and audiences.

Settings reads only, importable without the OIDC client stack: the sign-in throttle (which app loading
imports) and the login page only need to know whether OIDC is configured.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings


def oidc_enabled() -> bool:
    return bool(getattr(settings, "OIDC_ISSUER", ""))


def setting(name: str, default: Any) -> Any:
    return getattr(settings, name, default)


def issuer() -> str:
    return settings.OIDC_ISSUER.rstrip("/")


def client_id() -> str:
    return setting("OIDC_CLIENT_ID", "")


def allowed_algorithms() -> list[str]:
    algs = setting("OIDC_RP_SIGN_ALGO", "RS256")
    algs = [algs] if isinstance(algs, str) else list(algs)
    # Symmetric algorithms and "none" are never accepted: the key would be the client secret or nothing.
    return [alg for alg in algs if alg[:2] in ("RS", "PS", "ES")]


def cli_client_id() -> str:
    """The public client the `osmo` CLI signs in with (device code, password): OIDC_CLI_CLIENT_ID, else the
    portal's own client."""
    return setting("OIDC_CLI_CLIENT_ID", "") or client_id()


def bearer_audiences() -> set[str]:
    return {client_id(), cli_client_id(), *setting("OIDC_BEARER_AUDIENCES", [])} - {""}
