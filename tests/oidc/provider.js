// A Keycloak-shaped OpenID provider for Pool Portal's login tests. Listens on 127.0.0.1 only.
//
// Environment (all set by tests/oidc/fixtures.py):
//   OIDC_PORT            port to listen on (issuer is http://127.0.0.1:<port>)
//   OIDC_ACCOUNTS_FILE   JSON {"<login>": {"groups": [...], "roles": [...], "preferred_username"?, "email"?,
//                        "given_name"?, "family_name"?}}; re-read on every lookup so tests can change a
//                        user's groups between logins. A login that is not in it does not exist.
//   OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_REDIRECT_URIS (comma-separated), OIDC_POST_LOGOUT_REDIRECT_URIS
//   OIDC_JWKS_FILE       optional private JWKS (the tests mint tokens with the same key); else one is generated
//   OIDC_CLI_CLIENT_ID   a public client for the osmo CLI's device-code sign-in (default osmo-cli)
import fs from 'node:fs';
import { parse as parseForm } from 'node:querystring';
import Provider from 'oidc-provider';

const env = (name, fallback) => process.env[name] ?? fallback;
const list = (name) => env(name, '').split(',').map((s) => s.trim()).filter(Boolean);
const port = Number(env('OIDC_PORT', '9090'));
const issuer = `http://127.0.0.1:${port}`;
const clientId = env('OIDC_CLIENT_ID', 'pool-portal');

function readAccounts() {
  return JSON.parse(fs.readFileSync(env('OIDC_ACCOUNTS_FILE'), 'utf8'));
}

async function findAccount(ctx, id) {
  const account = readAccounts()[id];
  if (!account) return undefined; // unknown users do not exist here, as in Keycloak
  return {
    accountId: id,
    async claims() {
      return {
        sub: id,
        preferred_username: account.preferred_username ?? id,
        email: account.email ?? `${id}@example.test`,
        email_verified: true,
        given_name: account.given_name ?? id,
        family_name: account.family_name ?? 'Tester',
        groups: account.groups ?? [], // Keycloak sends full paths ("/osmo-team") when asked to
        realm_access: { roles: account.roles ?? [] },
      };
    },
  };
}

const provider = new Provider(issuer, {
  clients: [{
    client_id: clientId,
    client_secret: env('OIDC_CLIENT_SECRET', 'test-secret'),
    redirect_uris: list('OIDC_REDIRECT_URIS'),
    post_logout_redirect_uris: list('OIDC_POST_LOGOUT_REDIRECT_URIS'),
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_post', // client_secret_basic is accepted as well
    id_token_signed_response_alg: 'RS256',
  }, {
    // The osmo CLI's public client, as Keycloak's osmo-device: device code (RFC 8628) and refresh, no secret.
    client_id: env('OIDC_CLI_CLIENT_ID', 'osmo-cli'),
    token_endpoint_auth_method: 'none',
    grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
    response_types: [],
    redirect_uris: [],
    id_token_signed_response_alg: 'RS256',
  }],
  jwks: process.env.OIDC_JWKS_FILE ? JSON.parse(fs.readFileSync(process.env.OIDC_JWKS_FILE, 'utf8')) : undefined,
  findAccount,
  // Keycloak releases these with its default client scopes; here they come with `openid`.
  claims: {
    openid: ['sub', 'groups', 'realm_access'],
    email: ['email', 'email_verified'],
    profile: ['preferred_username', 'given_name', 'family_name'],
  },
  conformIdTokenClaims: false, // like Keycloak: profile, groups and roles in the ID token too
  pkce: { required: () => false }, // optional, S256 when the client sends it
  features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true }, deviceFlow: { enabled: true } },
  cookies: { keys: ['pool-portal-test-idp-only'] },
  // First-party client: no consent screen (Keycloak's default), the grant covers what was asked.
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) return ctx.oidc.provider.Grant.find(grantId);
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope(ctx.oidc.requestParamScopes ? [...ctx.oidc.requestParamScopes].join(' ') : 'openid');
    await grant.save();
    return grant;
  },
});
// Keycloak answers an unknown login with its form again and "Invalid username or password", never a grant.
provider.use(async (ctx, next) => {
  if (ctx.method !== 'POST' || !/^\/interaction\/[\w-]+$/.test(ctx.path)) return next();
  const chunks = [];
  for await (const chunk of ctx.req) chunks.push(chunk);
  const form = parseForm(Buffer.concat(chunks).toString());
  if (form.prompt === 'login' && !Object.hasOwn(readAccounts(), String(form.login))) {
    ctx.type = 'html';
    ctx.body = `<!DOCTYPE html><title>Sign-in</title><p class="error">Invalid username or password.</p>
<form method="post" action="${ctx.path}"><input type="hidden" name="prompt" value="login">
<input required type="text" name="login"><input required type="password" name="password">
<button type="submit">Sign-in</button></form>`;
    return undefined;
  }
  ctx.request.body = form; // oidc-provider reads an already parsed body from here
  return next();
});
// Keycloak's device authorization answer names its polling interval (the CLI reads it); oidc-provider leaves
// the RFC's default of 5 s unsaid.
provider.use(async (ctx, next) => {
  await next();
  if (ctx.path === '/device/auth' && ctx.status === 200 && ctx.body && typeof ctx.body === 'object') {
    ctx.body.interval ??= 5;
  }
});
provider.on('server_error', (ctx, err) => console.error('server_error', err));

provider.listen(port, '127.0.0.1', () => console.log(`oidc-provider listening on ${issuer}`));
