/**
 * JWT claim mapping (real gVisor): a platform told to read the organisation,
 * the scopes and a one-sandbox restriction from claims of other names
 * (WARREN_JWT_ORG_CLAIM, _SCOPES_CLAIM, _SANDBOX_CLAIM) takes them from those
 * claims, and only from them: the default names `org` and `scope` mean nothing.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { JWTPayload } from 'jose';
import { startTestPlatform, type TestPlatform } from '../fixture';
import { callFrom, jwksServer, sign, signingKey, type SigningKey } from '../jwt-helpers';

const ISSUER = 'https://idp.claims.test';
const AUDIENCE = 'warren-claims';
const ORG_CLAIM = 'https://warren.test/tenant';
const SCOPES_CLAIM = 'permissions';
const SANDBOX_CLAIM = 'warren_sandbox';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('JWT claims of configured names: organisation, scopes, sandbox (real gVisor)', () => {
  let p: TestPlatform;
  let jwks: Awaited<ReturnType<typeof jwksServer>>;
  let key: SigningKey;
  let orgB: string;
  let s1: string;
  let s2: string;
  const made: string[] = [];
  let n = 10;
  const from = () => `127.0.1.${n++}`;
  const opts = { issuer: ISSUER, audience: AUDIENCE };
  const token = (claims: JWTPayload) => sign(key, claims, opts);
  /** A token of org B under the configured claim names. */
  const mapped = (scopes: string | string[], more: JWTPayload = {}) =>
    token({ [ORG_CLAIM]: orgB, [SCOPES_CLAIM]: scopes, ...more });
  const call = async (
    t: string,
    path: string,
    o: { method?: string; json?: unknown } = {},
  ): Promise<{ status: number; body: Json }> => callFrom(p.url, from(), path, { token: t, ...o });
  const ids = (body: Json): string[] => body.items.map((s: { id: string }) => s.id).sort();
  const expectError = (r: { status: number; body: Json }, status: number, code: string) => {
    assert.equal(r.status, status, JSON.stringify(r.body));
    assert.equal(r.body.error.code, code);
    return r.body.error.message as string;
  };

  before(async () => {
    key = await signingKey('claims-1');
    jwks = await jwksServer(() => [key.jwk]);
    p = await startTestPlatform({
      jwt: {
        jwksUrl: jwks.url,
        issuer: ISSUER,
        audience: AUDIENCE,
        orgClaim: ORG_CLAIM,
        scopesClaim: SCOPES_CLAIM,
        sandboxClaim: SANDBOX_CLAIM,
        labelsClaim: null,
        jwksCooldownMs: 0,
      },
    });
    const res = await p.api('/v1/orgs', { method: 'POST', json: { name: 'claims-b' } });
    assert.equal(res.status, 201);
    orgB = ((await res.json()) as { id: string }).id;
    // Two sandboxes of org B, made by a token of the mapped claims.
    const writer = await mapped('sandboxes:write sandboxes:read');
    for (const name of ['one', 'two']) {
      const r = await call(writer, '/v1/sandboxes', {
        method: 'POST',
        json: { template: 'base', memory_mb: 128, metadata: { claims: name } },
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      made.push(r.body.id);
    }
    [s1, s2] = made as [string, string];
  });

  after(async () => {
    try {
      if (p && orgB) {
        const writer = await mapped(['sandboxes:write']);
        for (const id of made)
          await callFrom(p.url, '127.0.1.1', `/v1/sandboxes/${id}`, {
            token: writer,
            method: 'DELETE',
          });
      }
    } finally {
      await p?.stop();
      await jwks?.close();
    }
  });

  it('the organisation and scopes come from the configured claims', async () => {
    const reader = await mapped('openid sandboxes:read');
    const list = await call(reader, '/v1/sandboxes');
    assert.equal(list.status, 200, JSON.stringify(list.body));
    assert.deepEqual(ids(list.body), [s1, s2].sort());
    const one = await call(reader, `/v1/sandboxes/${s1}`);
    assert.equal(one.status, 200);
    assert.equal(one.body.id, s1);
    assert.equal(one.body.metadata.claims, 'one');
    // The admin of org_default sees none of org B's sandboxes: they were made in org B.
    const admins = await call(p.adminToken, '/v1/sandboxes');
    assert.equal(admins.status, 200);
    assert.deepEqual(ids(admins.body), []);
    // An array in the scopes claim works too; a key it makes belongs to org B.
    const keys = await mapped(['keys', 'sandboxes:read']);
    const created = await call(keys, '/v1/keys', {
      method: 'POST',
      json: { name: 'from-mapped-jwt', scopes: ['sandboxes:read'] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.org_id, orgB);
    assert.equal(created.body.created_by, `jwt:${ISSUER}#user-1`);
    const revoked = await call(keys, `/v1/keys/${created.body.id}`, { method: 'DELETE' });
    assert.ok(revoked.status === 204 || revoked.status === 200, JSON.stringify(revoked.body));
  });

  it('a scope missing from the configured claim is 403 MISSING_SCOPE naming it', async () => {
    const reader = await mapped('sandboxes:read');
    const del = await call(reader, `/v1/sandboxes/${s1}`, { method: 'DELETE' });
    assert.match(expectError(del, 403, 'MISSING_SCOPE'), /sandboxes:write/);
    const keys = await call(reader, '/v1/keys');
    assert.match(expectError(keys, 403, 'MISSING_SCOPE'), /\bkeys\b/);
    const audit = await call(await mapped(['audit']), '/v1/sandboxes');
    assert.match(expectError(audit, 403, 'MISSING_SCOPE'), /sandboxes:read/);
    // The sandbox is still there.
    assert.equal((await call(reader, `/v1/sandboxes/${s1}`)).status, 200);
  });

  it('the sandbox claim restricts the token to that sandbox', async () => {
    const pinned = await mapped('sandboxes:read sandboxes:write', { [SANDBOX_CLAIM]: s1 });
    const list = await call(pinned, '/v1/sandboxes');
    assert.equal(list.status, 200, JSON.stringify(list.body));
    assert.deepEqual(ids(list.body), [s1]);
    assert.equal((await call(pinned, `/v1/sandboxes/${s1}`)).status, 200);
    expectError(await call(pinned, `/v1/sandboxes/${s2}`), 404, 'SANDBOX_NOT_FOUND');
    expectError(
      await call(pinned, `/v1/sandboxes/${s2}`, { method: 'DELETE' }),
      404,
      'SANDBOX_NOT_FOUND',
    );
    // A restricted token makes no new sandboxes.
    const create = await call(pinned, '/v1/sandboxes', {
      method: 'POST',
      json: { template: 'base', memory_mb: 128 },
    });
    if (create.status === 201) made.push(create.body.id);
    expectError(create, 403, 'KEY_RESTRICTED');
    // A claim of another name restricts nothing: both sandboxes are seen.
    const other = await mapped('sandboxes:read', { sandbox_id: s1, sandbox: s1 });
    assert.deepEqual(ids((await call(other, '/v1/sandboxes')).body), [s1, s2].sort());
  });

  it('the default claim names are not read', async () => {
    // org and scope alone: no organisation claim.
    const defaults = await token({ org: orgB, scope: 'sandboxes:read' });
    const r = await call(defaults, '/v1/sandboxes');
    const why = expectError(r, 401, 'UNAUTHORIZED');
    assert.ok(why.includes(ORG_CLAIM), why);
    // The configured organisation claim with `scope`: no scopes claim.
    const noScopes = await token({ [ORG_CLAIM]: orgB, scope: 'admin' });
    const why2 = expectError(await call(noScopes, '/v1/sandboxes'), 401, 'UNAUTHORIZED');
    assert.ok(why2.includes(SCOPES_CLAIM), why2);
    // Both present: the configured claims win, `org` and `scope` grant nothing.
    const both = await mapped('sandboxes:read', { org: 'org_default', scope: 'admin' });
    const list = await call(both, '/v1/sandboxes');
    assert.equal(list.status, 200, JSON.stringify(list.body));
    assert.deepEqual(ids(list.body), [s1, s2].sort());
    const orgs = await call(both, '/v1/orgs', { method: 'POST', json: { name: 'nope' } });
    expectError(orgs, 403, 'MISSING_SCOPE');
    expectError(await call(both, '/v1/keys'), 403, 'MISSING_SCOPE');
  });
});
