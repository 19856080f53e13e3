/**
 * Webhooks of the resources other than sandboxes, through the real routes of
 * a real platform (gVisor): template.built and template.failed after
 * POST /v1/templates, database.created after POST /v1/databases and
 * database.restored after POST /v1/databases/{id}/restore. A receiver on
 * loopback verifies every delivery with the standardwebhooks package; the
 * database events must never carry credentials. Templates are built into a
 * private templates directory (test/templates.ts).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Database } from '@warren/protocol';
import { createDatabase, dropDatabase } from '../databases';
import { startTemplatesPlatform, type TemplatesPlatform } from '../templates';
import type { TestPlatform } from '../fixture';
import { verifiedReceiver, type VerifiedReceiver } from '../webhook-receiver';
import { waitFor } from '../wait';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Delivery {
  body: string;
  event: { type: string; timestamp: string; data: Json };
}

describe('webhooks of templates and databases (real gVisor)', { timeout: 900_000 }, () => {
  let t: TemplatesPlatform;
  let p: TestPlatform;
  let receiver: VerifiedReceiver | undefined;
  const got: Delivery[] = [];
  const databases: string[] = [];
  const templates: string[] = [];

  /** The first verified delivery of `type` that `match` accepts. */
  const event = (type: string, match: (data: Json) => boolean) =>
    waitFor(() => got.find((d) => d.event.type === type && match(d.event.data)), {
      what: `a signed ${type} webhook`,
      timeoutMs: 30_000,
    });
  /** The record a database event carries: no credentials in it, nor anywhere in the body. */
  const assertNoCredentials = (d: Delivery, db: Database) => {
    const record = d.event.data.database;
    for (const field of ['password', 'connection_url', 'pooled_url'])
      assert.equal(field in record, false, `${field} in ${d.event.type}`);
    assert.ok(!d.body.includes(db.password), `the password in ${d.event.type}`);
    assert.ok(!/postgres(ql)?:\/\/[^\s"]*:[^\s"]*@/.test(d.body), 'a URL with a password');
  };

  before(async () => {
    t = await startTemplatesPlatform({ also: ['postgres-17'] });
    p = t.p;
    receiver = await verifiedReceiver(
      (url) =>
        p.json('/v1/webhooks', {
          method: 'POST',
          json: { url, events: ['template.*', 'database.*'] },
        }),
      (event, body) => got.push({ body, event: event as Delivery['event'] }),
    );
  });

  after(async () => {
    try {
      for (const id of databases) await dropDatabase(p, id);
      for (const name of templates) await p.api(`/v1/templates/${name}`, { method: 'DELETE' });
      if (p) {
        assert.deepEqual((await p.json('/v1/databases')).items, [], 'no database left');
        for (const name of templates)
          assert.equal((await p.api(`/v1/templates/${name}`)).status, 404);
      }
    } finally {
      await t?.stop();
      receiver?.close();
    }
  });

  it('template.built after a recipe build, template.failed with the code after a failed step', async () => {
    templates.push('hooked');
    const built = await t.build({ name: 'hooked', base: 'base', steps: [{ run: 'true' }] });
    assert.equal(built.status, 200);
    assert.equal(built.error, undefined, JSON.stringify(built.error));
    assert.equal(built.done?.name, 'hooked');
    const ok = (await event('template.built', (d) => d.template?.name === 'hooked')).event;
    assert.equal(ok.data.template.state, 'ready');
    assert.equal(ok.data.template.base, 'base');
    assert.equal(ok.data.cause.kind, 'api');
    assert.ok(Date.parse(ok.timestamp) > 0);

    const broken = await t.build({
      name: 'hook-broken',
      base: 'base',
      steps: [{ run: 'true' }, { run: 'exit 3' }],
    });
    assert.equal(broken.error?.code, 'TEMPLATE_BUILD_FAILED');
    const failed = (await event('template.failed', (d) => d.template?.name === 'hook-broken'))
      .event;
    assert.deepEqual(failed.data.template, { name: 'hook-broken' });
    assert.deepEqual(Object.keys(failed.data.error).sort(), ['code', 'message']);
    assert.equal(failed.data.error.code, 'TEMPLATE_BUILD_FAILED');
    assert.match(failed.data.error.message, /^step 2 \(run: exit 3\) failed: exit code 3/);
    assert.equal(failed.data.error.message, broken.error?.message);
    assert.equal(failed.data.cause.kind, 'api');
    await t.assertNothingLeft('hook-broken');
    // Each build reported once: no template.failed for the one that was built, nor the reverse.
    const types = got.filter((d) => d.event.type.startsWith('template.'));
    assert.deepEqual(
      types.map((d) => [d.event.type, d.event.data.template.name]),
      [
        ['template.built', 'hooked'],
        ['template.failed', 'hook-broken'],
      ],
    );
  });

  it('database.created and database.restored carry the database id, never its credentials', async () => {
    const db = await createDatabase(p, { label: 'hooked', memory_mb: 256 });
    databases.push(db.id);
    assert.ok(db.password.length > 0 && db.connection_url.includes(db.password));
    const created = await event('database.created', (d) => d.database?.id === db.id);
    assert.equal(created.event.data.database.label, 'hooked');
    assert.equal(created.event.data.database.memory_mb, 256);
    assert.equal(created.event.data.cause.kind, 'api');
    assertNoCredentials(created, db);

    // A restore of the latest archive needs the first base backup, taken right after create.
    await waitFor(
      async () => (await p.json<Database>(`/v1/databases/${db.id}`)).archive.last_base_backup_at,
      { what: 'the first base backup', timeoutMs: 120_000, intervalMs: 300 },
    );
    const res = await p.api(`/v1/databases/${db.id}/restore`, {
      method: 'POST',
      json: { label: 'hooked-restored' },
    });
    const copy = (await res.json()) as Database;
    if (copy.id) databases.push(copy.id);
    assert.equal(res.status, 201, JSON.stringify(copy));
    assert.notEqual(copy.id, db.id);
    const restored = await event('database.restored', (d) => d.database?.id === copy.id);
    assert.equal(restored.event.data.source_id, db.id);
    assert.equal(restored.event.data.database.parent_id, db.id);
    assert.equal(restored.event.data.database.label, 'hooked-restored');
    assertNoCredentials(restored, copy);
    assert.ok(!restored.body.includes(db.password), 'the source password');
    // The restore made a database, and only database.restored says so: no second database.created.
    assert.equal(got.filter((d) => d.event.type === 'database.created').length, 1);
  });
});
