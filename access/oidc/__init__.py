"""Sign-in through an OpenID Connect provider (Keycloak in production), and OIDC bearer tokens for the API.

Everything is configured from the issuer's discovery document (`{OIDC_ISSUER}/.well-known/openid-configuration`),
fetched on first use and cached; nothing is fetched at import or start-up. When `OIDC_ISSUER` is unset, OIDC
is off: the views answer 404, `verify_bearer_token` returns None and local accounts work alone.

- Users are matched on (issuer, subject) through `access.models.Identity`, never by e-mail.
- ID tokens and bearer tokens are verified locally (RS256) against the issuer's JWKS, cached, refetched
  when an unknown `kid` shows up (at most once per `OIDC_JWKS_MIN_REFETCH_SECONDS`).
- At every sign-in (and every new bearer token) the groups and roles in the claims go to
  `access.services.roles.sync_roles_from_claims`, which applies each role's sync mode.
- A user who ends up with no portal role sees a 403 page saying so; a refused sign-in ends on a failure
  page, never in a server error.

Modules, so that what only asks "is OIDC on?" loads none of the client stack (PyJWT, requests,
mozilla-django-oidc):
- `configuration`: settings reads (`oidc_enabled`, the client id, accepted algorithms and audiences);
- `provider`: discovery document, signing keys and token verification, cached;
- `roles`: role sync from claims;  `backend`: the authentication backend (settings.AUTHENTICATION_BACKENDS);
- `bearer`: OIDC bearer tokens for the API;  `views`: sign-in, callback, logout and their pages (urlpatterns).

See docs/oidc.md.
"""
