/**
 * Database copies end to end, on real gVisor: continuous archiving, point in
 * time restore, branches of a running database, and bad input to all of it.
 * One platform and one source database are shared.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { Database } from '@warren/protocol';
import { runCli, startTestPlatform, type TestPlatform } from '../fixture';
import {
  archiveNow,
  connectError,
  createDatabase,
  dropDatabase,
  firstBaseBackup,
  withClient,
} from '../databases';
import { waitUntil } from '../wait';
import { PG_OUTBOX, PG_STAGING } from '../../packages/server/src/databases/postgres';

describe('database archive, restores and branches (real gVisor)', { timeout: 900_000 }, () => {
  let p: TestPlatform;
  let db: Database;
  const made: string[] = [];

  before(async () => {
    p = await startTestPlatform({ dbPort: 0 });
    db = await createDatabase(p, { label: 'source' });
    await withClient(p, db.connection_url, async (c) => {
      await c.query('CREATE TABLE items (id int primary key)');
      await c.query('INSERT INTO items VALUES (1), (2), (3)');
    });
    made.push(db.id);
  });

  after(async () => {
    try {
      for (const id of made) await dropDatabase(p, id);
      const left = await p.json<{ items: Database[] }>('/v1/databases');
      assert.deepEqual(left.items, [], 'no database left');
      assert.deepEqual(readdirSync(join(p.home, 'volumes')), [], 'no volume left');
    } finally {
      await p?.stop();
    }
  });

  it('archives WAL continuously and restores to a point in time between two inserts', async () => {
    // The first base backup is taken right after create.
    await firstBaseBackup(p, db);
    await withClient(p, db.connection_url, async (c) => {
      await c.query('CREATE TABLE events (name text)');
      await c.query(`INSERT INTO events VALUES ('first')`);
    });
    const between = new Date().toISOString();
    await waitUntil(Date.parse(between) + 50, 'a moment after the first insert');
    await withClient(p, db.connection_url, (c) => c.query(`INSERT INTO events VALUES ('second')`));
    const file = await archiveNow(p, db);
    const view = await p.json<Database>(`/v1/databases/${db.id}`);
    assert.ok(view.archive.last_archived_wal! >= file);
    assert.ok(view.archive.last_archived_at);

    const pit = await p.json<Database>(`/v1/databases/${db.id}/restore`, {
      method: 'POST',
      json: { target_time: between, label: 'pit' },
    });
    made.push(pit.id);
    assert.equal(pit.state, 'ready');
    assert.equal(pit.parent_id, db.id);
    assert.equal(pit.restored_to, between);
    const rows = await withClient(p, pit.connection_url, (c) =>
      c.query('SELECT name FROM events ORDER BY name'),
    );
    assert.deepEqual(
      rows.rows.map((r) => r.name),
      ['first'],
    );
    // Without a target: everything archived.
    const latest = await p.json<Database>(`/v1/databases/${db.id}/restore`, {
      method: 'POST',
      json: {},
    });
    made.push(latest.id);
    const all = await withClient(p, latest.connection_url, (c) =>
      c.query('SELECT name FROM events ORDER BY name'),
    );
    assert.deepEqual(
      all.rows.map((r) => r.name),
      ['first', 'second'],
    );
  });

  it('branches a running database: writes in one never show in the other', async () => {
    // The parent's own files on its volume: WAL being handed to its archive, staging.
    const left = [`${PG_OUTBOX}/000000010000000000000099.tmp`, `${PG_STAGING}/leftover`];
    for (const f of left)
      await p.host.files.write(db.sandbox_id, f, Readable.from([Buffer.from('parent')]));
    const branch = await p.json<Database>(`/v1/databases/${db.id}/branches`, {
      method: 'POST',
      json: { label: 'feature' },
    });
    made.push(branch.id);
    // The branch starts without them (its archive would take the parent's WAL); the parent keeps them.
    const names = async (sandbox: string, dir: string) =>
      (await p.host.files.list(sandbox, dir)).items.map((f) => `${dir}/${f.name}`);
    for (const f of left) {
      const dir = f.slice(0, f.lastIndexOf('/'));
      assert.ok(!(await names(branch.sandbox_id, dir)).includes(f), `${f} left in the branch`);
      assert.ok((await names(db.sandbox_id, dir)).includes(f), `${f} gone from the parent`);
    }
    for (const f of left) await p.host.files.remove(db.sandbox_id, f, false);
    assert.equal(branch.parent_id, db.id);
    assert.notEqual(branch.password, db.password);
    // On this host (ext4) the volumes live in the XFS pool: the branch's image
    // shares its blocks with the parent's instead of copying them.
    assert.equal((await p.host.info()).capabilities.volume_clone, 'reflink');
    const records = p.context.databases.service.queries;
    const image = join(p.home, 'volumes', (await records.byId(branch.id))!.volume_id, 'volume.img');
    assert.match(execFileSync('filefrag', ['-v', image], { encoding: 'utf8' }), /\bshared\b/);
    await withClient(p, branch.connection_url, async (c) => {
      assert.equal((await c.query('SELECT count(*)::int AS n FROM items')).rows[0].n, 3);
      await c.query('INSERT INTO items VALUES (10)');
    });
    await withClient(p, db.connection_url, async (c) => {
      assert.equal((await c.query('SELECT count(*)::int AS n FROM items')).rows[0].n, 3);
      await c.query('INSERT INTO items VALUES (20)');
    });
    await withClient(p, branch.connection_url, async (c) => {
      const ids = (await c.query('SELECT id FROM items ORDER BY id')).rows.map((r) => r.id);
      assert.deepEqual(ids, [1, 2, 3, 10]);
    });
    // The parent's password does not open the branch.
    const cross = branch.connection_url.replace(`:${branch.password}@`, `:${db.password}@`);
    assert.equal(await connectError(p, cross), '28P01');
  });

  it('restores an idle database to latest at once: it waits for no WAL file that is not written yet', async () => {
    // An hour of archive_timeout: nothing but the restore's own switch ends a WAL file.
    const idle = await createDatabase(p, { label: 'idle', archive_timeout_seconds: 3600 });
    made.push(idle.id);
    await firstBaseBackup(p, idle);
    await withClient(p, idle.connection_url, (c) =>
      c.query("CREATE TABLE kept AS SELECT 'yes' AS v"),
    );
    await archiveNow(p, idle);
    // The restore switches again with nothing written since: the file it must wait for is the
    // one archived above, not the next one (which would end only after archive_timeout).
    const copy = await p.json<Database>(`/v1/databases/${idle.id}/restore`, {
      method: 'POST',
      json: { label: 'idle-latest' },
    });
    made.push(copy.id);
    await withClient(p, copy.connection_url, async (c) => {
      assert.equal((await c.query('SELECT v FROM kept')).rows[0].v, 'yes');
    });
  });

  it('is branched, restored and shown by the CLI (warren db branch, restore, get)', async () => {
    await firstBaseBackup(p, db);
    // `warren db branch|restore <id> --label <label> --json`: the new copy of db, printed.
    const copyBy = async (command: string, label: string) => {
      const out = await runCli(p, ['db', command, db.id, '--label', label, '--json']);
      assert.equal(out.code, 0, out.stderr);
      const created = JSON.parse(out.stdout) as Database;
      made.push(created.id);
      assert.equal(created.parent_id, db.id);
      assert.equal(created.label, label);
      return created;
    };
    const count = (d: Database) =>
      withClient(p, d.connection_url, async (c) => {
        return (await c.query('SELECT count(*)::int AS n FROM items')).rows[0].n as number;
      });
    const branch = await copyBy('branch', 'cli-branch');
    assert.equal(await count(branch), await count(db));

    await archiveNow(p, db);
    const copy = await copyBy('restore', 'cli-restore');
    assert.equal(await count(copy), await count(db));

    const shown = await runCli(p, ['db', 'get', copy.id]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.equal((JSON.parse(shown.stdout) as Database).label, 'cli-restore');
    // A restore target in the future: the CLI exits non-zero with the API's code.
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const refused = await runCli(p, ['db', 'restore', db.id, '--time', future]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /INVALID_RESTORE_TARGET/);
  });

  it('answers bad input with typed errors and leaves nothing behind', async () => {
    const before = (await p.json<{ items: Database[] }>('/v1/databases')).items.length;
    const volumesBefore = readdirSync(join(p.home, 'volumes')).length;
    const bad = async (path: string, json: unknown, status: number, code: string) => {
      const res = await p.api(path, { method: 'POST', json });
      const body = (await res.json()) as { error: { code: string } };
      assert.equal(res.status, status, `${path} ${JSON.stringify(json)}: ${JSON.stringify(body)}`);
      assert.equal(body.error.code, code);
    };
    await bad('/v1/databases', { label: 'x', colour: 'red' }, 400, 'INVALID_REQUEST');
    await bad('/v1/databases', {}, 400, 'INVALID_REQUEST');
    await bad('/v1/databases', { label: 'x', memory_mb: 100_000 }, 400, 'RESOURCES_OUT_OF_RANGE');
    await bad('/v1/databases', { label: 'x', cpu: 16 }, 400, 'RESOURCES_OUT_OF_RANGE');
    await bad('/v1/databases', { label: 'x', disk_mb: 10_000_000 }, 400, 'RESOURCES_OUT_OF_RANGE');
    const future = new Date(Date.now() + 3600_000).toISOString();
    await bad(
      `/v1/databases/${db.id}/restore`,
      { target_time: future },
      400,
      'INVALID_RESTORE_TARGET',
    );
    await bad(
      `/v1/databases/${db.id}/restore`,
      { target_time: '2000-01-01T00:00:00Z' },
      400,
      'INVALID_RESTORE_TARGET',
    );
    await bad(
      `/v1/databases/${db.id}/restore`,
      { target_time: 'yesterday' },
      400,
      'INVALID_REQUEST',
    );
    await bad('/v1/databases/db_doesnotexist0000/branches', {}, 404, 'DATABASE_NOT_FOUND');
    const gone = await createDatabase(p, { label: 'short-lived' });
    await dropDatabase(p, gone.id);
    await bad(`/v1/databases/${gone.id}/branches`, {}, 404, 'DATABASE_NOT_FOUND');
    assert.equal(await connectError(p, gone.connection_url), '3D000');
    assert.equal((await p.json<{ items: Database[] }>('/v1/databases')).items.length, before);
    assert.equal(readdirSync(join(p.home, 'volumes')).length, volumesBefore);
  });
});
