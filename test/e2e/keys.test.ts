import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestPlatform, runCli, type TestPlatform } from '../fixture';
import { previewRequest } from '../preview-app';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('organisations and scoped API keys (real gVisor)', () => {
  let p: TestPlatform;
  let orgB: string;
  let keyA: Json; // org_default, every scope but admin
  let keyB: Json; // org B's admin
  let a1: string; // org A, labelled team=red
  let a2: string; // org A, no labels
  let b1: string; // org B
  let snapA: string;
  const made: Array<{ id: string; token: string }> = [];

  const call = (token: string, path: string, init: { method?: string; json?: unknown } = {}) =>
    p.api(path, { ...init, token });
  async function expectCode(res: Response, status: number, code: string): Promise<Json> {
    const body = (await res.json()) as Json;
    assert.equal(res.status, status, JSON.stringify(body));
    assert.equal(body.error.code, code);
    return body;
  }
  async function ok(res: Response, status = 200): Promise<Json> {
    const text = await res.text();
    assert.equal(res.status, status, text);
    return text ? JSON.parse(text) : null;
  }
  async function newKey(token: string, body: Record<string, unknown>): Promise<Json> {
    const key = await ok(await call(token, '/v1/keys', { method: 'POST', json: body }), 201);
    return key;
  }
  async function sandbox(token: string, body: Record<string, unknown>): Promise<string> {
    const sbx = await ok(
      await call(token, '/v1/sandboxes', {
        method: 'POST',
        json: { template: 'base', memory_mb: 128, ...body },
      }),
      201,
    );
    made.push({ id: sbx.id, token });
    return sbx.id;
  }

  before(async () => {
    p = await startTestPlatform();
    orgB = (
      await ok(await call(p.adminToken, '/v1/orgs', { method: 'POST', json: { name: 'b' } }), 201)
    ).id;
    keyA = await newKey(p.adminToken, {
      name: 'a',
      scopes: [
        'sandboxes:read',
        'sandboxes:write',
        'exec',
        'files',
        'snapshots',
        'volumes',
        'audit',
        'keys',
        'templates',
      ],
    });
    keyB = await newKey(p.adminToken, { name: 'b', scopes: ['admin'], org_id: orgB });
    [a1, a2, b1] = await Promise.all([
      sandbox(keyA.key, { metadata: { team: 'red' } }),
      sandbox(keyA.key, {}),
      sandbox(keyB.key, {}),
    ]);
    snapA = (
      await ok(await call(keyA.key, `/v1/sandboxes/${a1}/snapshots`, { method: 'POST' }), 201)
    ).id;
    await ok(
      await call(keyA.key, '/v1/volumes', { method: 'POST', json: { name: 'vol-a', size_mb: 8 } }),
      201,
    );
  });

  after(async () => {
    if (!p) return;
    try {
      for (const { id, token } of made)
        await call(token, `/v1/sandboxes/${id}`, { method: 'DELETE' });
      if (snapA) await call(p.adminToken, `/v1/snapshots/${snapA}`, { method: 'DELETE' });
      await call(p.adminToken, '/v1/volumes/vol-a', { method: 'DELETE' });
    } finally {
      await p.stop();
    }
  });

  it('keys are wrn_ keys, shown once; organisations are made by the install admin only', async () => {
    assert.match(keyA.key, /^wrn_[a-z0-9]{40}$/);
    assert.equal(keyA.prefix, keyA.key.slice(0, 12));
    assert.equal(keyB.org_id, orgB);
    await expectCode(
      await call(keyB.key, '/v1/orgs', { method: 'POST', json: { name: 'c' } }),
      403,
      'MISSING_SCOPE',
    );
    const all = (await ok(await call(p.adminToken, '/v1/orgs'))).items.map((o: Json) => o.id);
    assert.ok(all.includes('org_default') && all.includes(orgB));
    assert.deepEqual(
      (await ok(await call(keyB.key, '/v1/orgs'))).items.map((o: Json) => o.id),
      [orgB],
    );
    // Another organisation named by a key that is not the install's admin does not exist.
    await expectCode(
      await call(keyA.key, '/v1/keys', {
        method: 'POST',
        json: { name: 'x', scopes: ['exec'], org_id: orgB },
      }),
      404,
      'ORGANISATION_NOT_FOUND',
    );
  });

  it("another organisation's resources are 404 everywhere, and never listed", async () => {
    const b = keyB.key;
    const paths: Array<[string, string, unknown?]> = [
      ['GET', `/v1/sandboxes/${a1}`],
      ['PATCH', `/v1/sandboxes/${a1}`, { metadata: { x: '1' } }],
      ['DELETE', `/v1/sandboxes/${a1}`],
      ['POST', `/v1/sandboxes/${a1}/exec`, { cmd: 'true' }],
      ['GET', `/v1/sandboxes/${a1}/processes`],
      ['GET', `/v1/sandboxes/${a1}/files?path=/etc/hostname`],
      ['GET', `/v1/sandboxes/${a1}/files/list?path=/`],
      ['POST', `/v1/sandboxes/${a1}/snapshots`],
      ['POST', `/v1/sandboxes/${a1}/fork`, {}],
      ['GET', `/v1/sandboxes/${a1}/network`],
    ];
    for (const [method, path, json] of paths)
      await expectCode(await call(b, path, { method, json }), 404, 'SANDBOX_NOT_FOUND');
    await expectCode(await call(b, `/v1/snapshots/${snapA}`), 404, 'SNAPSHOT_NOT_FOUND');
    await expectCode(
      await call(b, '/v1/sandboxes', { method: 'POST', json: { from_snapshot: snapA } }),
      404,
      'SNAPSHOT_NOT_FOUND',
    );
    await expectCode(await call(b, '/v1/volumes/vol-a'), 404, 'VOLUME_NOT_FOUND');
    await expectCode(
      await call(b, '/v1/volumes/vol-a', { method: 'DELETE' }),
      404,
      'VOLUME_NOT_FOUND',
    );
    await expectCode(await call(b, '/v1/databases/db_0123456789abcdef'), 404, 'DATABASE_NOT_FOUND');
    // Lists of B hold only B's resources.
    const sbx = (await ok(await call(b, '/v1/sandboxes'))).items.map((s: Json) => s.id);
    assert.deepEqual(sbx, [b1]);
    assert.deepEqual((await ok(await call(b, '/v1/snapshots'))).items, []);
    assert.deepEqual((await ok(await call(b, '/v1/volumes'))).items, []);
    const audit = (await ok(await call(b, '/v1/audit'))).items;
    assert.ok(audit.length > 0 && audit.every((e: Json) => e.org_id === orgB));
    assert.ok(
      audit.some((e: Json) => e.actor === keyB.id),
      'audit rows name the acting key',
    );
    // B cannot read A's audit log by naming it; the install's admin can read B's.
    await expectCode(await call(b, '/v1/audit?org_id=org_default'), 404, 'ORGANISATION_NOT_FOUND');
    const ofB = (await ok(await p.api(`/v1/audit?org_id=${orgB}`))).items;
    assert.ok(ofB.length > 0 && ofB.every((e: Json) => e.org_id === orgB));
    assert.ok(ofB.some((e: Json) => e.actor === keyB.id));
    await expectCode(await p.api('/v1/audit?org_id=org_nosuch'), 404, 'ORGANISATION_NOT_FOUND');
    const keys = (await ok(await call(b, '/v1/keys'))).items.map((k: Json) => k.id);
    assert.deepEqual(keys, [keyB.id]);
    // Official templates are shared.
    assert.ok(
      (await ok(await call(b, '/v1/templates'))).items.some((t: Json) => t.name === 'base'),
    );
    // And A sees its own.
    assert.ok(
      (await ok(await call(keyA.key, '/v1/sandboxes'))).items.some((s: Json) => s.id === a1),
    );
  });

  it('a template an organisation builds does not exist for another', async () => {
    const build = await call(keyA.key, '/v1/templates', {
      method: 'POST',
      json: { name: 'tpl-a', base: 'base', steps: [{ run: 'echo a > /a' }] },
    });
    const last = JSON.parse((await build.text()).trim().split('\n').at(-1)!) as Json;
    assert.equal(last.type, 'done', JSON.stringify(last));
    try {
      const b = keyB.key;
      await expectCode(await call(b, '/v1/templates/tpl-a'), 404, 'TEMPLATE_NOT_FOUND');
      const create = { method: 'POST', json: { template: 'tpl-a', memory_mb: 128 } };
      await expectCode(await call(b, '/v1/sandboxes', create), 404, 'TEMPLATE_NOT_FOUND');
      const del = { method: 'DELETE' };
      await expectCode(await call(b, '/v1/templates/tpl-a', del), 404, 'TEMPLATE_NOT_FOUND');
      const names = async (k: string) =>
        (await ok(await call(k, '/v1/templates'))).items.map((t: Json) => t.name);
      assert.ok(!(await names(b)).includes('tpl-a'));
      assert.ok((await names(keyA.key)).includes('tpl-a'));
    } finally {
      await call(keyA.key, '/v1/templates/tpl-a', { method: 'DELETE' });
    }
  });

  it("a preview URL of another organisation's sandbox is 404 with that organisation's key", async () => {
    const host = `3000-${a1}.localhost:${new URL(p.url).port}`;
    const asB = await previewRequest(p.url, host, '/', {
      headers: { authorization: `Bearer ${keyB.key}` },
    });
    assert.equal(asB.status, 404);
    assert.equal(JSON.parse(asB.body.toString()).error.code, 'SANDBOX_NOT_FOUND');
    // A's key gets through to the sandbox (nothing listens there).
    const asA = await previewRequest(p.url, host, '/', {
      headers: { authorization: `Bearer ${keyA.key}` },
    });
    assert.equal(JSON.parse(asA.body.toString()).error.code, 'PORT_NOT_LISTENING');
    const bad = await previewRequest(p.url, host, '/', {
      headers: { authorization: 'Bearer wrn_nope' },
    });
    assert.equal(bad.status, 401);
  });

  it('a key without a scope gets 403 MISSING_SCOPE naming it', async () => {
    const reader = await newKey(keyA.key, { name: 'reader', scopes: ['sandboxes:read'] });
    await ok(await call(reader.key, `/v1/sandboxes/${a1}`));
    const body = await expectCode(
      await call(reader.key, `/v1/sandboxes/${a1}/exec`, { method: 'POST', json: { cmd: 'true' } }),
      403,
      'MISSING_SCOPE',
    );
    assert.match(body.error.message, /\bexec\b/);
    await expectCode(await call(reader.key, '/v1/volumes'), 403, 'MISSING_SCOPE');
    // Keys make keys no wider than themselves.
    await expectCode(
      await call(reader.key, '/v1/keys', { method: 'POST', json: { name: 'x', scopes: ['exec'] } }),
      403,
      'MISSING_SCOPE',
    );
    await expectCode(
      await call(keyA.key, '/v1/keys', { method: 'POST', json: { name: 'x', scopes: ['admin'] } }),
      403,
      'MISSING_SCOPE',
    );
  });

  it('a key restricted to one sandbox works there only, and cannot create', async () => {
    const pinned = await newKey(keyA.key, {
      name: 'pinned',
      scopes: ['exec', 'sandboxes:read', 'sandboxes:write', 'keys'],
      sandbox_id: a1,
    });
    const run = await ok(
      await call(pinned.key, `/v1/sandboxes/${a1}/exec`, {
        method: 'POST',
        json: { cmd: 'echo', args: ['hi'] },
      }),
    );
    assert.equal(run.stdout, 'hi\n');
    await expectCode(
      await call(pinned.key, `/v1/sandboxes/${a2}/exec`, { method: 'POST', json: { cmd: 'true' } }),
      404,
      'SANDBOX_NOT_FOUND',
    );
    await expectCode(await call(pinned.key, `/v1/sandboxes/${a2}`), 404, 'SANDBOX_NOT_FOUND');
    const list = (await ok(await call(pinned.key, '/v1/sandboxes'))).items.map((s: Json) => s.id);
    assert.deepEqual(list, [a1]);
    await expectCode(
      await call(pinned.key, '/v1/sandboxes', { method: 'POST', json: { memory_mb: 128 } }),
      403,
      'KEY_RESTRICTED',
    );
    // Its keys stay pinned to the same sandbox.
    await expectCode(
      await call(pinned.key, '/v1/keys', { method: 'POST', json: { name: 'x', scopes: ['exec'] } }),
      403,
      'KEY_RESTRICTED',
    );
    await newKey(pinned.key, { name: 'x', scopes: ['exec'], sandbox_id: a1 });
  });

  it('a label-restricted key sees matching sandboxes, and its creates carry the labels', async () => {
    const red = await newKey(keyA.key, {
      name: 'red',
      scopes: ['sandboxes:read', 'sandboxes:write', 'files', 'snapshots'],
      sandbox_labels: { team: 'red' },
    });
    const list = (await ok(await call(red.key, '/v1/sandboxes'))).items.map((s: Json) => s.id);
    assert.deepEqual(list, [a1]);
    assert.deepEqual((await ok(await call(red.key, '/v1/sandboxes?metadata.team=blue'))).items, []);
    await expectCode(
      await call(red.key, `/v1/sandboxes/${a2}/files?path=/etc/hostname`),
      404,
      'SANDBOX_NOT_FOUND',
    );
    await ok(await call(red.key, `/v1/sandboxes/${a1}/files/stat?path=/etc/hostname`));
    assert.deepEqual(
      (await ok(await call(red.key, '/v1/snapshots'))).items.map((s: Json) => s.id),
      [snapA],
    );
    await expectCode(
      await call(red.key, '/v1/sandboxes', { method: 'POST', json: { memory_mb: 128 } }),
      403,
      'KEY_RESTRICTED',
    );
    await expectCode(
      await call(red.key, `/v1/sandboxes/${a1}`, {
        method: 'PATCH',
        json: { metadata: { team: 'blue' } },
      }),
      403,
      'KEY_RESTRICTED',
    );
    const mine = await sandbox(red.key, { metadata: { team: 'red', extra: '1' } });
    assert.ok(
      (await ok(await call(red.key, '/v1/sandboxes'))).items.some((s: Json) => s.id === mine),
    );
  });

  it('revocation and expiry stop a key at once; listings show no secrets', async () => {
    const temp = await newKey(keyA.key, { name: 'temp', scopes: ['sandboxes:read'] });
    await ok(await call(temp.key, '/v1/sandboxes'));
    const listed = (await ok(await call(keyA.key, '/v1/keys'))).items.find(
      (k: Json) => k.id === temp.id,
    );
    assert.equal(listed.key, undefined);
    assert.equal(listed.token_hash, undefined);
    assert.equal(listed.prefix, temp.prefix);
    assert.ok(listed.last_used_at, 'last_used_at is set');
    assert.equal(
      await ok(await call(keyA.key, `/v1/keys/${temp.id}`, { method: 'DELETE' }), 204),
      null,
    );
    await expectCode(await call(temp.key, '/v1/sandboxes'), 401, 'UNAUTHORIZED');
    await expectCode(
      await call(keyA.key, `/v1/keys/${temp.id}`, { method: 'DELETE' }),
      404,
      'KEY_NOT_FOUND',
    );
    // B cannot revoke A's keys: they do not exist for it.
    await expectCode(
      await call(keyB.key, `/v1/keys/${keyA.id}`, { method: 'DELETE' }),
      404,
      'KEY_NOT_FOUND',
    );

    const brief = await newKey(keyA.key, {
      name: 'brief',
      scopes: ['sandboxes:read'],
      ttl_seconds: 1,
    });
    assert.ok(Date.parse(brief.expires_at) > Date.now());
    await new Promise((r) => setTimeout(r, 1200));
    const body = await expectCode(await call(brief.key, '/v1/sandboxes'), 401, 'UNAUTHORIZED');
    assert.match(body.error.message, /expired/);
    await expectCode(
      await call(keyA.key, '/v1/keys', {
        method: 'POST',
        json: { name: 'x', scopes: ['exec'], expires_at: '2001-01-01T00:00:00Z' },
      }),
      400,
      'INVALID_REQUEST',
    );
  });

  it('the CLI creates, lists and revokes keys', async () => {
    const created = await runCli(p, [
      'key',
      'create',
      'cli',
      '--scope',
      'sandboxes:read,exec',
      '--label',
      'team=red',
      '--ttl',
      '600',
    ]);
    assert.equal(created.code, 0, created.stderr);
    const key = created.stdout.trim();
    assert.match(key, /^wrn_[a-z0-9]{40}$/);
    const id = /^(tok_\w+):/.exec(created.stderr)?.[1];
    assert.ok(id, created.stderr);
    const list = (await ok(await call(key, '/v1/sandboxes'))).items.map((s: Json) => s.id);
    assert.ok(list.includes(a1) && !list.includes(a2));
    const ls = await runCli(p, ['key', 'ls']);
    assert.equal(ls.code, 0, ls.stderr);
    assert.match(
      ls.stdout,
      new RegExp(`${id}\\s+cli\\s+${key.slice(0, 12)}\\.\\.\\.\\s+sandboxes:read,exec\\s+team=red`),
    );
    const revoked = await runCli(p, ['key', 'revoke', id]);
    assert.equal(revoked.code, 0, revoked.stderr);
    await expectCode(await call(key, '/v1/sandboxes'), 401, 'UNAUTHORIZED');
    const bad = await runCli(p, ['key', 'create', 'x', '--scope', 'nonsense']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /unknown scope nonsense/);
  });
});
