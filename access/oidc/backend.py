"""The authentication backend (settings.AUTHENTICATION_BACKENDS): mozilla-django-oidc's, with endpoints from
discovery, local RS256 checks, users matched on (issuer, subject) through `access.models.Identity`, and roles
synced at every sign-in."""

from __future__ import annotations

import logging
from typing import Any

import requests
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import SuspiciousOperation
from django.db import IntegrityError, transaction
from django.utils import timezone
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from access import claims as claim_utils
from access.models import Identity
from access.oidc.configuration import allowed_algorithms, client_id, oidc_enabled, setting
from access.oidc.provider import OIDCError, decode_token, provider_metadata
from access.oidc.roles import sync_roles

logger = logging.getLogger(__name__)


class PortalOIDCBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's backend with endpoints from discovery, local RS256 checks and (iss, sub) matching."""

    OIDC_RP_IDP_SIGN_KEY = None

    def __init__(self, *args, **kwargs):
        # The parent reads endpoint settings here (and fails without them); ours come from discovery, lazily.
        self.UserModel = get_user_model()
        self.request = None

    # The parent's code reads these attributes; they resolve against discovery and our settings.
    OIDC_RP_CLIENT_ID = property(lambda self: client_id())
    OIDC_RP_CLIENT_SECRET = property(lambda self: setting("OIDC_CLIENT_SECRET", ""))
    OIDC_RP_SIGN_ALGO = property(lambda self: allowed_algorithms()[0])
    OIDC_OP_TOKEN_ENDPOINT = property(lambda self: provider_metadata().token_endpoint)
    OIDC_OP_USER_ENDPOINT = property(lambda self: provider_metadata().userinfo_endpoint)
    OIDC_OP_JWKS_ENDPOINT = property(lambda self: provider_metadata().jwks_uri)

    def _fail(self, reason: str) -> None:
        if self.request is not None:
            self.request.oidc_failure = reason

    def authenticate(self, request, **kwargs):
        # Only the callback view passes `nonce`; anything else (the admin's username/password form) is not ours.
        if request is None or "nonce" not in kwargs or not oidc_enabled():
            return None
        try:
            return super().authenticate(request, **kwargs)
        except OIDCError as exc:
            logger.warning("OIDC sign-in refused: %s", exc)
            self._fail(exc.code)
        except (requests.ConnectionError, requests.Timeout) as exc:
            logger.error("OIDC sign-in failed: the provider cannot be reached: %s", exc)
            self._fail("unavailable")
        except requests.RequestException as exc:
            logger.warning("OIDC sign-in refused: the provider answered %s", exc)
            self._fail("refused")
        except SuspiciousOperation as exc:
            logger.warning("OIDC sign-in refused: %s", exc)
            self._fail("token")
        return None

    def get_user(self, user_id):
        return ModelBackend.get_user(self, user_id)  # the parent's would keep deactivated users signed in

    def verify_token(self, token, **kwargs):
        claims = decode_token(token or "", audiences={client_id()}, id_token=True)
        if setting("OIDC_USE_NONCE", True) and claims.get("nonce") != kwargs.get("nonce"):
            raise OIDCError("ID token nonce does not match the sign-in request")
        return claims

    def get_userinfo(self, access_token, id_token, payload):
        """The verified ID token's claims, completed by the userinfo endpoint (whose `sub` must match)."""
        claims = dict(payload)
        endpoint = provider_metadata().userinfo_endpoint
        if endpoint and setting("OIDC_USE_USERINFO", True):
            try:
                response = requests.get(
                    endpoint,
                    headers={"Authorization": f"Bearer {access_token}"},
                    timeout=setting("OIDC_TIMEOUT", 10),
                    verify=setting("OIDC_VERIFY_SSL", True),
                )
                response.raise_for_status()
                info = response.json()
            except (requests.RequestException, ValueError) as exc:
                raise OIDCError(f"userinfo failed: {exc}", code="refused") from exc
            if not isinstance(info, dict) or info.get("sub") != payload.get("sub"):
                raise OIDCError("userinfo subject differs from the ID token's")
            protected = {"iss", "sub", "aud", "azp", "exp", "iat", "nonce"}
            claims.update({k: v for k, v in info.items() if k not in protected})
        if self.request is not None:
            self.request.oidc_received = claim_utils.received_summary(claims, client_id())
        return claims

    def verify_claims(self, claims):
        if (
            not isinstance(claims.get("sub"), str)
            or not claims["sub"]
            or claims.get("iss") != provider_metadata().issuer
        ):
            self._fail("account")
            return False
        return True

    def filter_users_by_claims(self, claims):
        return self.UserModel.objects.filter(identity__issuer=claims["iss"], identity__subject=claims["sub"])

    def describe_user_by_claims(self, claims):
        return f"subject {claims.get('sub')!r} of {claims.get('iss')!r}"

    def _free_username(self, claims) -> str:
        base = claim_utils.username_base(claims)
        taken = {
            u.lower()
            for u in self.UserModel.objects.filter(username__istartswith=base).values_list("username", flat=True)
        }
        for candidate in claim_utils.username_candidates(base):
            if candidate.lower() not in taken:
                return candidate
        raise OIDCError(f"no free username near {base!r}", code="account")

    def create_user(self, claims, *, interactive: bool = True):
        for _attempt in range(3):
            try:
                with transaction.atomic():
                    user = self.UserModel(username=self._free_username(claims), **claim_utils.profile_fields(claims))
                    user.set_unusable_password()  # signs in through the IdP only
                    user.save()
                    Identity.objects.create(
                        user=user,
                        issuer=claims["iss"],
                        subject=claims["sub"],
                        last_login_at=timezone.now() if interactive else None,
                    )
            except IntegrityError:
                # A concurrent first sign-in of the same subject, or a username taken meanwhile: look again.
                existing = list(self.filter_users_by_claims(claims))
                if existing:
                    return self.update_user(existing[0], claims, interactive=interactive)
                continue
            logger.info("OIDC: created user %s for %s", user.username, self.describe_user_by_claims(claims))
            sync_roles(user, claims)
            return user
        raise OIDCError("could not create a user", code="account")

    def update_user(self, user, claims, *, interactive: bool = True):
        """A returning user: the IdP's profile fields (when sent), last sign-in, roles. The username stays."""
        profile = {name: value for name, value in claim_utils.profile_fields(claims).items() if value}
        changed = [name for name, value in profile.items() if getattr(user, name) != value]
        for name in changed:
            setattr(user, name, profile[name])
        if changed:
            user.save(update_fields=changed)
        if interactive:
            Identity.objects.filter(user=user).update(last_login_at=timezone.now())
        sync_roles(user, claims)
        return user

    def user_for_claims(self, claims, *, interactive: bool) -> Any | None:
        """The portal user for verified claims: found by (iss, sub), else created; roles synced."""
        if not self.verify_claims(claims):
            return None
        users = list(self.filter_users_by_claims(claims))
        if users:
            return self.update_user(users[0], claims, interactive=interactive)
        if not setting("OIDC_CREATE_USER", True):
            return None
        return self.create_user(claims, interactive=interactive)

    def get_or_create_user(self, access_token, id_token, payload):
        claims = self.get_userinfo(access_token, id_token, payload)
        user = self.user_for_claims(claims, interactive=True)
        if user is not None and not user.is_active:
            self._fail("account")
        return user
