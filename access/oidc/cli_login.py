"""What `osmo login` asks first (`GET /api/auth/login`, OSMO's `LoginInfo`): where the configured OpenID
provider starts a device-code sign-in, takes passwords and refresh tokens, and the client ids to use.

OSMO's CLI reads `device_endpoint` and `device_client_id` (src/cli/login.py), `token_endpoint`
(src/lib/utils/login.py), and in some releases `client_id` (src/lib/utils/client.py device_code_login).
With OIDC off, or the provider unreachable, every endpoint is null and the answer is still 200: `osmo login
--method token` asks too, and must not fail for a sign-in method it does not use.
"""

from __future__ import annotations

import logging

from access.oidc.configuration import cli_client_id, client_id, oidc_enabled
from access.oidc.provider import OIDCError, provider_metadata

logger = logging.getLogger(__name__)


def login_info() -> dict:
    info = {
        "auth_enabled": oidc_enabled(),
        "device_endpoint": None,
        "device_client_id": None,
        "client_id": None,
        "browser_endpoint": None,
        "browser_client_id": None,
        "token_endpoint": None,
        "logout_endpoint": None,
    }
    if not oidc_enabled():
        return info
    info.update(device_client_id=cli_client_id(), client_id=cli_client_id(), browser_client_id=client_id() or None)
    try:
        metadata = provider_metadata()
    except OIDCError as error:
        logger.warning("GET /api/auth/login: the identity provider's endpoints are unknown: %s", error)
        return info
    info.update(
        device_endpoint=metadata.device_authorization_endpoint or None,
        browser_endpoint=metadata.authorization_endpoint,
        token_endpoint=metadata.token_endpoint,
        logout_endpoint=metadata.end_session_endpoint or None,
    )
    return info
