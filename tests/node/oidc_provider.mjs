// A real OpenID provider (npm `oidc-provider`) on loopback, for the tests
// of `serve --http` as an OAuth resource server.
//
//   node oidc_provider.mjs [--port N] --key FILE
//
// Signs with the ES256 key in FILE (a private JWK), generating and writing
// one first when FILE does not exist: a test restarts the provider with a
// new FILE to rotate its key, or shares FILE between two providers to get a
// token with a known key but another issuer. Clients (client_credentials,
// secret "secret"): `alice-app` (groups eng), `bob-app` (groups ops),
// `brief-app` (tokens live 1 s), `nobody-app` (matches no principal).
// Access tokens are JWTs for the `resource` the request names. Prints
// `PORT <n>` once listening; exits when its stdin closes or on a signal.
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import Provider from 'oidc-provider';

const args = process.argv.slice(2);
const arg = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : fallback;
};
const keyFile = arg('key');
if (!keyFile) {
  console.error('usage: oidc_provider.mjs [--port N] --key FILE');
  process.exit(2);
}
if (!existsSync(keyFile)) {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = privateKey.export({ format: 'jwk' });
  jwk.kid = randomBytes(8).toString('hex');
  jwk.alg = 'ES256';
  jwk.use = 'sig';
  writeFileSync(keyFile, JSON.stringify(jwk), { mode: 0o600 });
}
const key = JSON.parse(readFileSync(keyFile, 'utf8'));

const GROUPS = { 'alice-app': ['eng'], 'bob-app': ['ops'], 'brief-app': ['eng'], 'nobody-app': ['visitors'] };
const client = (id) => ({
  client_id: id,
  client_secret: 'secret',
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  token_endpoint_auth_method: 'client_secret_post',
  id_token_signed_response_alg: 'ES256',
});

const port = Number(arg('port', '0'));
const server = (await import('node:http')).createServer();
await new Promise((ready) => server.listen(port, '127.0.0.1', ready));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: Object.keys(GROUPS).map(client),
  jwks: { keys: [key] },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      getResourceServerInfo: (_ctx, resource, who) => ({
        scope: 'tools',
        audience: resource,
        accessTokenTTL: who.clientId === 'brief-app' ? 1 : 600,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'ES256' } },
      }),
    },
  },
  extraTokenClaims: (_ctx, token) => ({ groups: GROUPS[token.clientId] ?? [] }),
});
server.on('request', provider.callback());

console.log(`PORT ${server.address().port}`);
const stop = () => server.close(() => process.exit(0));
process.stdin.on('end', stop);
process.stdin.resume();
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
