/**
 * The TypeScript SDK's `Keys` against a real platform: a key made with scopes
 * works for what they allow and nothing else, is listed without its secret, and
 * stops working once revoked.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Keys, Organisations, Sandbox, WarrenError, type ConnectionOptions } from '@warren/sdk';
import { startTestPlatform, type TestPlatform } from '../fixture';

function isCode(code: string, status: number) {
  return (err: unknown) => {
    assert.ok(err instanceof WarrenError, `expected a WarrenError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    assert.equal(err.status, status);
    return true;
  };
}

describe('TypeScript SDK: Keys create, list, revoke (real platform)', () => {
  let p: TestPlatform;
  let admin: ConnectionOptions;
  const made: string[] = [];
  const as = (apiKey: string): ConnectionOptions => ({ apiUrl: p.url, apiKey });

  before(async () => {
    p = await startTestPlatform();
    admin = { apiUrl: p.url, apiKey: p.adminToken };
  });
  after(async () => {
    try {
      for (const id of made) await Keys.revoke(id, admin).catch(() => undefined);
    } finally {
      await p?.stop();
    }
  });

  it('a key made with scopes is listed without its secret, works within them, and dies when revoked', async () => {
    const started = Date.now();
    const key = await Keys.create(
      'sdk-reader',
      { scopes: ['sandboxes:read', 'keys'], ttlSeconds: 600, sandboxLabels: { team: 'sdk' } },
      admin,
    );
    made.push(key.id);
    assert.match(key.key, /^wrn_[a-z0-9]{40}$/);
    assert.match(key.id, /^tok_/);
    assert.equal(key.name, 'sdk-reader');
    assert.equal(key.org_id, 'org_default');
    assert.equal(key.prefix, key.key.slice(0, 12));
    assert.deepEqual(key.scopes, ['sandboxes:read', 'keys']);
    assert.deepEqual(key.sandbox_labels, { team: 'sdk' });
    assert.equal(key.sandbox_id, null);
    const expires = Date.parse(key.expires_at ?? '');
    assert.ok(
      expires >= started + 590_000 && expires <= Date.now() + 610_000,
      `expires_at ${key.expires_at} is ttlSeconds from now`,
    );

    // Listed by the admin with its prefix, never its secret.
    const listed = (await Keys.list(admin)).find((k) => k.id === key.id);
    assert.ok(listed, 'the admin lists the new key');
    assert.equal(listed.name, 'sdk-reader');
    assert.equal(listed.prefix, key.key.slice(0, 12));
    assert.deepEqual(listed.scopes, ['sandboxes:read', 'keys']);
    assert.equal('key' in listed, false);
    assert.ok(!JSON.stringify(listed).includes(key.key.slice(12)), JSON.stringify(listed));

    // The key itself: an allowed call works, a scope it lacks is 403 MISSING_SCOPE.
    assert.deepEqual(await Sandbox.list(as(key.key)), []);
    const own = await Keys.list(as(key.key));
    assert.deepEqual(
      own.map((k) => k.id),
      [key.id],
      'a key without admin lists itself and the keys it made',
    );
    await assert.rejects(
      Sandbox.create({ ...as(key.key), template: 'base', metadata: { team: 'sdk' } }),
      isCode('MISSING_SCOPE', 403),
    );
    // It cannot make a key wider than itself.
    await assert.rejects(
      Keys.create('wider', { scopes: ['exec'], sandboxLabels: { team: 'sdk' } }, as(key.key)),
      isCode('MISSING_SCOPE', 403),
    );

    await Keys.revoke(key.id, admin);
    await assert.rejects(Sandbox.list(as(key.key)), isCode('UNAUTHORIZED', 401));
    await assert.rejects(Keys.list(as(key.key)), isCode('UNAUTHORIZED', 401));
    assert.equal(
      (await Keys.list(admin)).some((k) => k.id === key.id),
      false,
      'a revoked key is not listed',
    );
    await assert.rejects(Keys.revoke(key.id, admin), isCode('KEY_NOT_FOUND', 404));
  });

  it("a key of another organisation (orgId) sees that organisation's keys only", async () => {
    const org = await Organisations.create('sdk-keys-b', admin);
    assert.ok((await Organisations.list(admin)).some((o) => o.id === org.id));
    const b = await Keys.create('b-admin', { scopes: ['admin'], orgId: org.id }, admin);
    made.push(b.id);
    assert.equal(b.org_id, org.id);
    const inB = await Keys.create('b-exec', { scopes: ['exec'] }, as(b.key));
    made.push(inB.id);
    assert.equal(inB.org_id, org.id);
    assert.equal(inB.created_by, b.id);
    assert.deepEqual((await Keys.list(as(b.key))).map((k) => k.id).sort(), [b.id, inB.id].sort());
    assert.equal(
      (await Keys.list(admin)).some((k) => k.id === b.id || k.id === inB.id),
      false,
      "the install admin's listing is of its own organisation",
    );
    // Revoking through its organisation's admin; the install admin cannot reach it by id.
    await assert.rejects(Keys.revoke(inB.id, admin), isCode('KEY_NOT_FOUND', 404));
    await Keys.revoke(inB.id, as(b.key));
    assert.deepEqual(
      (await Keys.list(as(b.key))).map((k) => k.id),
      [b.id],
    );
  });
});
