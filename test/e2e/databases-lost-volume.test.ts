/**
 * Database durability on real gVisor, when the volume is lost: a database is
 * restored from its archive (base backup and WAL, or the seed cluster and its
 * whole archive) under a new epoch, and the archive works in an
 * S3-compatible bucket (s3rver).
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { Readable } from 'node:stream';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Database } from '@warren/protocol';
import { startTestPlatform, unmountBelow, type TestPlatform } from '../fixture';
import {
  archiveNow,
  createDatabase,
  databaseEvents,
  dropDatabase,
  firstBaseBackup,
  withClient,
} from '../databases';
import { startS3, type TestS3 } from '../s3';
import { waitFor } from '../wait';

describe('databases restored when their volume is lost (real gVisor)', { timeout: 900_000 }, () => {
  let p: TestPlatform;
  const made: string[] = [];

  before(async () => {
    p = await startTestPlatform({ dbPort: 0, dbWatchIntervalMs: 300, dbArchivePollMs: 200 });
  });

  after(async () => {
    try {
      for (const id of made) await dropDatabase(p, id);
    } finally {
      await p?.stop();
    }
  });

  /** The disk is lost: the server dies and its volume with it; resolves once restored (epoch 2). */
  async function loseVolume(db: Database): Promise<Database> {
    const rec = (await p.context.databases.service.queries.byId(db.id))!;
    await p.host.driver.kill(db.sandbox_id);
    const volumeDir = join(p.home, 'volumes', rec.volume_id);
    unmountBelow(volumeDir);
    rmSync(volumeDir, { recursive: true, force: true });
    return waitFor(
      async () => {
        const v = await p.json<Database>(`/v1/databases/${db.id}`);
        return v.state === 'ready' && v.archive.epoch === 2 ? v : null;
      },
      { what: 'the database restored under epoch 2', timeoutMs: 120_000, intervalMs: 300 },
    );
  }

  it('restores a database whose volume is lost from the archive, under a new epoch', async () => {
    const db = await createDatabase(p, { label: 'lost-volume' });
    made.push(db.id);
    await firstBaseBackup(p, db);
    await withClient(p, db.connection_url, async (c) => {
      await c.query('CREATE TABLE kept (n int)');
      await c.query('INSERT INTO kept SELECT generate_series(1, 1000)');
    });
    await archiveNow(p, db);
    const back = await loseVolume(db);
    const n = await withClient(p, back.connection_url, (c) =>
      c.query('SELECT count(*)::int AS n FROM kept'),
    );
    assert.equal(n.rows[0].n, 1000);
    assert.ok((await databaseEvents(p, db.id)).some((e) => e.kind === 'restored'));
    // An old copy that came back could not archive under this id any more. Its outbox is
    // another directory here, or the platform's own archiver (epoch 2) might take the file first.
    const sbx = back.sandbox_id;
    const outbox = '/var/lib/warren-pg/stale-outbox';
    await p.host.files.mkdir(sbx, { path: outbox, parents: true });
    await p.host.files.write(sbx, `${outbox}/stale`, Readable.from(['x']));
    await assert.rejects(
      p.host.archive.collect(sbx, outbox, `databases/${db.id}/wal/`, {
        key: `databases/${db.id}/epoch`,
        value: '1',
      }),
      /DATABASE_FENCED|epoch/,
    );
    assert.equal((await p.host.files.list(sbx, outbox)).items.length, 1);
    await p.host.files.remove(sbx, outbox, true);
  });

  it('restores a database lost before its first base backup from the seed and its whole archive', async () => {
    const db = await createDatabase(p, { label: 'lost-early' });
    made.push(db.id);
    // The state of a database whose host is lost right after create: no base backup yet.
    // (The one taken in the background is forgotten once it is done.)
    await firstBaseBackup(p, db);
    await p.context.store.db
      .deleteFrom('database_backups')
      .where('database_id', '=', db.id)
      .execute();
    await withClient(p, db.connection_url, async (c) => {
      await c.query('CREATE TABLE kept (n int)');
      await c.query('INSERT INTO kept SELECT generate_series(1, 700)');
    });
    await archiveNow(p, db);
    const back = await loseVolume(db);
    const n = await withClient(p, back.connection_url, (c) =>
      c.query('SELECT count(*)::int AS n, max(n)::int AS top FROM kept'),
    );
    assert.deepEqual([n.rows[0].n, n.rows[0].top], [700, 700]);
    const restored = (await databaseEvents(p, db.id)).filter((e) => e.kind === 'restored');
    assert.match(restored.at(-1)!.message, /the seed cluster: no base backup yet/);
    await withClient(p, back.connection_url, (c) => c.query('INSERT INTO kept VALUES (701)'));
  });
});

describe('database archive in an S3-compatible bucket (s3rver)', () => {
  let s3: TestS3;
  let p: TestPlatform;

  before(async () => {
    s3 = await startS3('warren-archive');
    p = await startTestPlatform({ dbPort: 0, snapshotStore: { kind: 's3', ...s3.config } });
  });

  after(async () => {
    try {
      await p?.stop();
    } finally {
      await s3?.stop();
    }
  });

  it('ships WAL and base backups to the bucket, and restores from it', async () => {
    const db = await createDatabase(p, { label: 's3' });
    try {
      await firstBaseBackup(p, db);
      await withClient(p, db.connection_url, (c) => c.query('CREATE TABLE t AS SELECT 7 AS n'));
      const file = await archiveNow(p, db);
      const keys = (await p.host.archive.list(`databases/${db.id}/`)).map((o) => o.key);
      assert.ok(
        keys.some((k) => k.endsWith(`/wal/${file}`)),
        keys.join('\n'),
      );
      assert.ok(
        keys.some((k) => k.includes('/base/')),
        keys.join('\n'),
      );
      const copy = await p.json<Database>(`/v1/databases/${db.id}/restore`, {
        method: 'POST',
        json: {},
      });
      try {
        const r = await withClient(p, copy.connection_url, (c) => c.query('SELECT n FROM t'));
        assert.deepEqual(r.rows, [{ n: 7 }]);
      } finally {
        await dropDatabase(p, copy.id);
      }
    } finally {
      await dropDatabase(p, db.id);
    }
    assert.deepEqual(
      await p.host.archive.list(`databases/${db.id}/`),
      [],
      'the archive went with it',
    );
  });
});
