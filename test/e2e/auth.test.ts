import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { JWK } from 'jose';
import { startTestPlatform, type TestPlatform } from '../fixture';
import { callFrom, jwksServer, sign, signingKey, type SigningKey } from '../jwt-helpers';

const ISSUER = 'https://idp.test';
const AUDIENCE = 'warren-api';

describe('JWT auth against a JWKS, and failed-auth limiting (no sandboxes)', () => {
  let p: TestPlatform;
  let jwks: Awaited<ReturnType<typeof jwksServer>>;
  let k1: SigningKey;
  let k2: SigningKey;
  let other: SigningKey;
  let served: JWK[] = [];
  let orgB: string;
  // Each case calls from its own loopback address: failures of one do not block another.
  let n = 10;
  const from = () => `127.0.0.${n++}`;
  const opts = { issuer: ISSUER, audience: AUDIENCE };

  before(async () => {
    [k1, k2, other] = await Promise.all([signingKey('k1'), signingKey('k2'), signingKey('k1')]);
    served = [k1.jwk];
    jwks = await jwksServer(() => served);
    p = await startTestPlatform({
      jwt: {
        jwksUrl: jwks.url,
        issuer: ISSUER,
        audience: AUDIENCE,
        orgClaim: 'org',
        scopesClaim: 'scope',
        sandboxClaim: null,
        labelsClaim: 'warren_labels',
        jwksCooldownMs: 0,
      },
      authFailures: { limit: 5, windowSeconds: 60, blockSeconds: 2 },
    });
    const res = await p.api('/v1/orgs', { method: 'POST', json: { name: 'b' } });
    orgB = ((await res.json()) as { id: string }).id;
  });
  after(async () => {
    await p?.stop();
    await jwks?.close();
  });

  const get = (token: string, path = '/v1/sandboxes') => callFrom(p.url, from(), path, { token });
  const expect401 = async (token: string, words: RegExp) => {
    const r = await get(token);
    assert.equal(r.status, 401, JSON.stringify(r.body));
    assert.equal(r.body.error.code, 'UNAUTHORIZED');
    assert.match(r.body.error.message, words);
  };

  it('a valid token acts for its organisation, and the audit log names its subject', async () => {
    const token = await sign(
      k1,
      { sub: 'alice', org: orgB, scope: 'openid sandboxes:read keys audit' },
      opts,
    );
    const list = await get(token);
    assert.equal(list.status, 200, JSON.stringify(list.body));
    const made = await callFrom(p.url, from(), '/v1/keys', {
      token,
      method: 'POST',
      json: { name: 'from-jwt', scopes: ['sandboxes:read'] },
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.equal(made.body.org_id, orgB);
    assert.equal(made.body.created_by, `jwt:${ISSUER}#alice`);
    const audit = await get(token, '/v1/audit');
    assert.equal(audit.status, 200);
    const event = audit.body.items.find((e: { action: string }) => e.action === 'POST /v1/keys');
    assert.equal(event.actor, `jwt:${ISSUER}#alice`);
    // Scopes as an array work too; wrn_ keys are unchanged.
    const arr = await sign(k1, { org: orgB, scope: ['sandboxes:read'] }, opts);
    assert.equal((await get(arr)).status, 200);
    assert.equal((await get(p.adminToken)).status, 200);
  });

  it('expired, not yet valid, wrong issuer or audience, bad signature: 401 saying why', async () => {
    const claims = { org: orgB, scope: 'sandboxes:read' };
    const ago = Math.floor(Date.now() / 1000) - 600;
    await expect401(await sign(k1, claims, { ...opts, expiresIn: ago }), /expired/);
    await expect401(await sign(k1, claims, { ...opts, notBefore: '10m' }), /not valid yet/);
    await expect401(await sign(k1, claims, { ...opts, audience: 'other' }), /audience/);
    await expect401(await sign(k1, claims, { ...opts, issuer: 'https://evil.test' }), /issuer/);
    // Signed by another key under the same kid.
    await expect401(await sign(other, claims, opts), /signature/);
  });

  it('an unknown organisation or scope is 401; a missing scope is 403 naming it', async () => {
    await expect401(await sign(k1, { org: 'org_nope', scope: 'admin' }, opts), /org_nope/);
    await expect401(await sign(k1, { org: orgB, scope: 'sandboxes:fly' }, opts), /sandboxes:fly/);
    await expect401(await sign(k1, { scope: 'admin' }, opts), /claim org/);
    const r = await get(await sign(k1, { org: orgB, scope: 'audit' }, opts));
    assert.equal(r.status, 403);
    assert.equal(r.body.error.code, 'MISSING_SCOPE');
    assert.match(r.body.error.message, /sandboxes:read/);
  });

  it('labels from a claim restrict the token like a restricted key', async () => {
    const token = await sign(
      k1,
      { org: orgB, scope: 'sandboxes:write', warren_labels: { team: 'red' } },
      opts,
    );
    const r = await callFrom(p.url, from(), '/v1/sandboxes', {
      token,
      method: 'POST',
      json: { template: 'base', metadata: { team: 'blue' } },
    });
    assert.equal(r.status, 403, JSON.stringify(r.body));
    assert.equal(r.body.error.code, 'KEY_RESTRICTED');
  });

  it('a key the provider rotates in later is fetched on its first token', async () => {
    const token = await sign(k2, { org: orgB, scope: 'sandboxes:read' }, opts);
    await expect401(token, /no key/);
    served = [k1.jwk, k2.jwk];
    const before = jwks.fetches();
    assert.equal((await get(token)).status, 200);
    assert.ok(jwks.fetches() > before, 'the JWKS was fetched again for the new kid');
    // Cached now: another request needs no fetch.
    const after = jwks.fetches();
    assert.equal((await get(token)).status, 200);
    assert.equal(jwks.fetches(), after);
  });

  it('an address with too many failed authentications gets 429 with Retry-After, then recovers', async () => {
    const bad = from();
    for (let i = 0; i < 5; i++) {
      const r = await callFrom(p.url, bad, '/v1/sandboxes', { token: 'wrn_nope' });
      assert.equal(r.status, 401);
    }
    const blocked = await callFrom(p.url, bad, '/v1/sandboxes', { token: p.adminToken });
    assert.equal(blocked.status, 429, JSON.stringify(blocked.body));
    assert.equal(blocked.body.error.code, 'RATE_LIMITED');
    assert.ok(Number(blocked.headers['retry-after']) >= 1);
    // Another address is not slowed, and health stays public.
    assert.equal((await get(p.adminToken)).status, 200);
    assert.equal((await callFrom(p.url, bad, '/v1/health')).status, 200);
    await new Promise((r) => setTimeout(r, 2100));
    const again = await callFrom(p.url, bad, '/v1/sandboxes', { token: p.adminToken });
    assert.equal(again.status, 200);
  });
});
