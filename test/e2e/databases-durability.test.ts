/**
 * Database durability on real gVisor: a killed server comes back with every
 * committed row, and an idle database scales to zero and a connection wakes
 * it. Restores of a lost volume are in databases-lost-volume.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import type { Database } from '@warren/protocol';
import { startTestPlatform, type TestPlatform } from '../fixture';
import {
  connectError,
  createDatabase,
  databaseEvents,
  dropDatabase,
  waitForState,
  withClient,
} from '../databases';
import { ARCHIVE_STOP } from '../../packages/server/src/databases/postgres/layout';
import { waitFor } from '../wait';

describe('database durability (real gVisor)', { timeout: 900_000 }, () => {
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

  it('restarts a killed server on its volume with every committed row, with a writer running', async () => {
    const db = await createDatabase(p, { label: 'crash' });
    made.push(db.id);
    await withClient(p, db.connection_url, (c) => c.query('CREATE TABLE w (n int primary key)'));
    const committed: number[] = [];
    let stop = false;
    // Ends with the test whatever happens: a writer left running after a failed wait would spin
    // on connections that fail at once once the platform is stopped, and starve the process.
    const writer = (async () => {
      for (let n = 1; !stop; n++) {
        try {
          await withClient(p, db.connection_url, (c) => c.query('INSERT INTO w VALUES ($1)', [n]));
          committed.push(n);
        } catch {
          // the server is down: this row was not committed
          await delay(50);
        }
      }
    })();
    let back: Database;
    try {
      await waitFor(() => committed.length >= 5, {
        what: 'rows before the crash',
        timeoutMs: 60_000,
      });
      // Killed in the middle of a stop: its archive-stop file is left on the volume,
      // and the next start removes it (else archiving would give up at once, for good).
      await p.context.databases.service.provisioner
        .postgres(db.sandbox_id)
        .shell(`touch ${ARCHIVE_STOP}`);
      await p.host.driver.kill(db.sandbox_id);
      back = await waitFor(
        async () => {
          const v = await p.json<Database>(`/v1/databases/${db.id}`);
          return v.state === 'ready' && v.sandbox_id !== db.sandbox_id ? v : null;
        },
        { what: 'the database back on a new sandbox', timeoutMs: 90_000, intervalMs: 200 },
      );
      const before = committed.length;
      await waitFor(() => committed.length > before + 2, {
        what: 'writes after recovery',
        timeoutMs: 30_000,
      });
    } finally {
      stop = true;
      await writer;
    }
    const rows = await withClient(p, back.connection_url, (c) => c.query('SELECT n FROM w'));
    const present = new Set(rows.rows.map((r) => r.n as number));
    assert.deepEqual(
      committed.filter((n) => !present.has(n)),
      [],
      'every committed row survived',
    );
    const kinds = (await databaseEvents(p, db.id)).map((e) => e.kind);
    assert.ok(kinds.includes('crashed') && kinds.includes('recovered'), kinds.join(','));
    const left = await p.context.databases.service.provisioner
      .postgres(back.sandbox_id)
      .shell(`test -e ${ARCHIVE_STOP} && echo left || echo removed`);
    assert.equal(left.trim(), 'removed');
  });

  it('scales an idle database to zero and wakes it on connect, data intact', async () => {
    const db = await createDatabase(p, { label: 'sleepy', scale_to_zero_seconds: 2 });
    made.push(db.id);
    await withClient(p, db.connection_url, async (c) => {
      await c.query('CREATE TABLE s (v text)');
      await c.query(`INSERT INTO s VALUES ('before sleep')`);
    });
    // An open connection, even idle in a transaction, keeps it awake; the front door records
    // it in the store while it stays open (how other control planes see it).
    const queries = p.context.databases.service.queries;
    await withClient(p, db.connection_url, async (c) => {
      await c.query('BEGIN');
      const opened = (await queries.byId(db.id))!.last_connection_at!;
      await new Promise((r) => setTimeout(r, 3000));
      assert.equal((await p.json<Database>(`/v1/databases/${db.id}`)).state, 'ready');
      assert.ok((await queries.byId(db.id))!.last_connection_at! > opened);
      await c.query('COMMIT');
    });
    // A hibernation first moves what waits in the outbox to the archive: slow on a loaded machine.
    await waitForState(p, db.id, 'hibernated', 90_000);
    const started = Date.now();
    const rows = await withClient(p, db.connection_url, (c) => c.query('SELECT v FROM s'));
    assert.deepEqual(rows.rows, [{ v: 'before sleep' }]);
    assert.ok(Date.now() - started < 30_000);
    assert.equal((await p.json<Database>(`/v1/databases/${db.id}`)).state, 'ready');
    const kinds = (await databaseEvents(p, db.id)).map((e) => e.kind);
    assert.ok(kinds.includes('hibernated') && kinds.includes('woken'), kinds.join(','));

    // A client of another control plane (its front door records it in the store, as above)
    // keeps it awake too, with no connection through this one.
    const other = setInterval(() => {
      void queries.update(db.id, { last_connection_at: new Date().toISOString() });
    }, 300);
    try {
      await new Promise((r) => setTimeout(r, 4000));
      assert.equal((await p.json<Database>(`/v1/databases/${db.id}`)).state, 'ready');
    } finally {
      clearInterval(other);
    }

    // A connection that arrives while the watch is putting it to sleep (held here just
    // before the checkpoint) waits for the hibernation and wakes it: it is never spliced
    // to a server that the checkpoint then cuts off.
    const lifecycle = p.context.databases.service.lifecycle;
    const transition = lifecycle.transition.bind(lifecycle);
    let sleeping!: () => void;
    const decided = new Promise<void>((r) => (sleeping = r));
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    lifecycle.transition = async (row, action, ...rest) => {
      if (action === 'hibernate' && row.id === db.sandbox_id) {
        sleeping();
        await held;
      }
      return transition(row, action, ...rest);
    };
    try {
      await decided;
      const racing = withClient(p, db.connection_url, async (c) => {
        const first = await c.query('SELECT v FROM s');
        await held; // the hibernation goes on: this connection must not be cut by it
        await new Promise((r) => setTimeout(r, 3000));
        return [first.rows, (await c.query('SELECT v FROM s')).rows];
      });
      await new Promise((r) => setTimeout(r, 1000));
      release();
      const rows = [{ v: 'before sleep' }];
      assert.deepEqual(await racing, [rows, rows]);
    } finally {
      release();
      lifecycle.transition = transition;
    }
    const raced = (await databaseEvents(p, db.id)).map((e) => e.kind);
    assert.deepEqual(raced.slice(-2), ['hibernated', 'woken'], raced.join(','));

    // A client that goes away in the middle of a long query leaves the query running in
    // a server process that holds its connection (a host socket, taken by descriptor),
    // which a checkpoint cannot save: the database still goes to sleep, the query ended.
    let seen = 0;
    await withClient(p, db.connection_url, async (c) => {
      c.on('error', () => undefined);
      // Counted with this connection open: on a loaded machine the database may have
      // gone to sleep (2 s without a connection) since the race above, and this
      // connection woken it.
      seen = (await databaseEvents(p, db.id)).length;
      void c.query('SELECT pg_sleep(600) /* orphaned */').catch(() => undefined);
      await delay(1000);
      (c as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    });
    await waitForState(p, db.id, 'hibernated', 90_000);
    const orphaned = await withClient(p, db.connection_url, (c) =>
      c.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE '%orphaned%'
               AND pid <> pg_backend_pid()`),
    );
    assert.deepEqual(orphaned.rows, [{ n: 0 }]);
    // Asleep at the first try: a failed checkpoint would have shown as a crash.
    const slept = (await databaseEvents(p, db.id)).slice(seen).map((e) => e.kind);
    assert.deepEqual(slept, ['hibernated', 'woken'], slept.join(','));

    // Its sandbox is lost while it sleeps: a connection is told it recovers, and the server
    // starts again on its volume with the data; it never stays a hibernated database
    // whose sandbox cannot wake.
    await waitForState(p, db.id, 'hibernated', 90_000);
    const asleep = await p.json<Database>(`/v1/databases/${db.id}`);
    await p.context.databases.service.lifecycle.destroy(
      asleep.org_id,
      asleep.sandbox_id,
      'lost while hibernated (test)',
    );
    assert.equal(await connectError(p, db.connection_url), '57P03');
    await waitForState(p, db.id, 'ready', 120_000);
    const back = await withClient(p, db.connection_url, (c) => c.query('SELECT v FROM s'));
    assert.deepEqual(back.rows, [{ v: 'before sleep' }]);
    const after = (await databaseEvents(p, db.id)).map((e) => e.kind);
    assert.ok(after.includes('crashed') && after.includes('recovered'), after.join(','));
  });
});
