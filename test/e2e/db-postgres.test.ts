/**
 * Managed PostgreSQL, the guest side, on real gVisor: GuestPostgres drives a
 * cluster in a `postgres-17` sandbox whose data lives on a volume at PG_MOUNT.
 * The test plays the host's archiver: it takes WAL files out of PG_OUTBOX
 * with the file API, as the control plane's archiver does through HostApi.
 * One database sandbox is shared by the checks in order; a second one
 * receives restores. Everything is removed in `after`, also after a failure.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { Readable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { newId, type HostApi } from '@warren/protocol';
import { createHostAgent, type LocalHostAgent } from '@warren/host-agent';
import { hostAgentConfig, loadConfig } from '../../packages/server/src/config';
import {
  DB_TEMPLATE,
  GuestPostgres,
  PGBOUNCER_PORT,
  PG_DATA,
  PG_MOUNT,
  PG_OUTBOX,
  PG_PORT,
  PG_STAGING,
} from '../../packages/server/src/databases/postgres';
import { connected } from '../../packages/server/src/databases/postgres/client';
import { SEED_DIR } from '../../packages/server/src/databases/postgres/layout';
import { RUNSC, TEMPLATES_DIR, unmountBelow } from '../fixture';
import { waitFor } from '../wait';

/** The host's side of archiving: takes every finished file out of a sandbox's outbox. */
class Outbox {
  readonly taken = new Map<string, Buffer>();
  private stopped = false;
  private loop: Promise<void> | null = null;
  constructor(
    private readonly host: HostApi,
    private readonly sandboxId: string,
  ) {}

  async takeOnce(): Promise<void> {
    const list = await this.host.files.list(this.sandboxId, PG_OUTBOX).catch(() => null);
    for (const f of list?.items ?? []) {
      if (f.type !== 'file' || f.name.endsWith('.tmp')) continue;
      const { stream } = await this.host.files.read(this.sandboxId, f.path);
      const chunks: Buffer[] = [];
      for await (const c of stream) chunks.push(c as Buffer);
      this.taken.set(f.name, Buffer.concat(chunks));
      await this.host.files.remove(this.sandboxId, f.path, false);
    }
  }

  start(): void {
    this.loop = (async () => {
      while (!this.stopped) {
        await this.takeOnce().catch(() => undefined);
        await delay(100);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }
}

async function readAll(host: HostApi, id: string, path: string): Promise<Buffer> {
  const { stream } = await host.files.read(id, path);
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** Names of the members of an uncompressed tar. */
function tarNames(tar: Buffer): string[] {
  const names: string[] = [];
  for (let off = 0; off + 512 <= tar.length;) {
    const header = tar.subarray(off, off + 512);
    if (header.every((b) => b === 0)) break;
    const name = header.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '');
    const size = parseInt(header.subarray(124, 136).toString('utf8').replace(/\0.*$/s, ''), 8);
    names.push(name);
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return names;
}

describe('managed PostgreSQL in a sandbox (real gVisor)', { timeout: 600_000 }, () => {
  const home = mkdtempSync('/tmp/wpg-');
  let host: LocalHostAgent;
  const sandboxes: string[] = [];
  const volumes: string[] = [];
  const outboxes: Outbox[] = [];
  const clients: pg.Client[] = [];
  const PASSWORD = 'first-Password-1';
  const NEW_PASSWORD = "second-P'ssword-2";
  let password = PASSWORD;
  let id = '';
  let db: GuestPostgres;
  let outbox: Outbox;

  /**
   * A new volume and a database sandbox with it at PG_MOUNT, its outbox emptied
   * by the test. `seeded`: the host copies the seed cluster onto the volume, as
   * the database service does (init takes it); otherwise init copies it itself.
   */
  async function databaseSandbox(
    o: { seeded?: boolean } = {},
  ): Promise<{ id: string; pg: GuestPostgres; outbox: Outbox }> {
    const volume = newId('volume');
    await host.volumes.create(volume, 512, {
      journal: true,
      ...(o.seeded && { seed: { template: DB_TEMPLATE, from: SEED_DIR, to: 'data.seed' } }),
    });
    volumes.push(volume);
    const sandbox = newId('sandbox');
    sandboxes.push(sandbox);
    await host.sandboxes.create({
      id: sandbox,
      template: DB_TEMPLATE,
      cpu: 1,
      memory_mb: 1024,
      env: {},
      volumes: [{ id: volume, name: 'db', mount_path: PG_MOUNT, read_only: false }],
    });
    const box = new Outbox(host, sandbox);
    box.start();
    outboxes.push(box);
    return { id: sandbox, pg: new GuestPostgres(host, sandbox), outbox: box };
  }

  async function connect(port: number, pass = password, sandbox = id): Promise<pg.Client> {
    const stream = connected(await host.sandboxes.openPort(sandbox, port));
    const client = new pg.Client({
      user: 'app',
      database: 'app',
      password: pass,
      stream: () => stream,
    });
    client.on('error', () => undefined);
    clients.push(client);
    await client.connect();
    return client;
  }

  /** PostgreSQL answers 28P01; PgBouncer ends a failed SCRAM exchange with 08P01. */
  async function loginFails(port: number, pass: string): Promise<void> {
    await assert.rejects(connect(port, pass), (err: { code?: string }) => {
      const expected = port === PG_PORT ? '28P01' : '08P01';
      assert.equal(err.code, expected, `port ${port}: ${String(err)}`);
      return true;
    });
  }

  before(async () => {
    host = await createHostAgent(
      hostAgentConfig(
        loadConfig(
          {},
          {
            hostId: 'host_pg',
            home,
            templatesDir: TEMPLATES_DIR,
            runsc: RUNSC,
            memoryBudgetMb: 4096,
          },
        ),
      ),
    );
    // Built by scripts/prepare-templates.ts; this only bakes again if the agent changed.
    await host.templates.ensure([DB_TEMPLATE], () => undefined);
    ({ id, pg: db, outbox } = await databaseSandbox({ seeded: true }));
  });

  after(async () => {
    for (const c of clients.splice(0)) await c.end().catch(() => undefined);
    for (const box of outboxes) await box.stop();
    for (const s of sandboxes) await host?.sandboxes.destroy(s).catch(() => undefined);
    await host?.settle();
    for (const v of volumes) await host?.volumes.remove(v).catch(() => undefined);
    await host?.close({ destroy: true });
    unmountBelow(home);
    rmSync(home, { recursive: true, force: true });
  });

  it('runs a cluster on its volume: SQL, SCRAM over TCP, pgvector as app', async () => {
    await db.init({ archiveTimeoutSeconds: 60 });
    await assert.rejects(db.init({ archiveTimeoutSeconds: 60 }), /not empty/);
    await db.start({ password });
    await db.start(); // already running: nothing to do
    assert.equal(await db.isReady(), true);
    assert.equal(await db.sql('select 1'), '1\n');
    assert.equal(await db.sql('select current_database()', 'postgres'), 'postgres\n');
    await assert.rejects(db.sql('select * from no_such_table'), (err: { code?: string }) => {
      assert.equal(err.code, 'DATABASE_COMMAND_FAILED');
      return true;
    });
    assert.equal(
      await db.sql(
        'select rolsuper, rolcreatedb, rolcreaterole from pg_roles where rolname = current_user or rolname = $$app$$ order by rolsuper desc',
      ),
      't|t|t\nf|t|t\n',
    );

    const c = await connect(PG_PORT);
    const who = await c.query(
      'select current_user, current_database(), inet_client_addr() as addr',
    );
    assert.deepEqual(who.rows[0], {
      current_user: 'app',
      current_database: 'app',
      addr: '127.0.0.1',
    });
    await loginFails(PG_PORT, 'wrong password');

    await c.query('CREATE EXTENSION vector');
    await c.query('CREATE TABLE items (id int PRIMARY KEY, embedding vector(3))');
    await c.query("INSERT INTO items VALUES (1, '[1,2,3]'), (2, '[4,5,6]'), (3, '[1,1,1]')");
    const near = await c.query("SELECT id FROM items ORDER BY embedding <-> '[1,2,4]' LIMIT 2");
    assert.deepEqual(
      near.rows.map((r: { id: number }) => r.id),
      [1, 3],
    );
  });

  it('PgBouncer: prepared statements across transactions, 500 clients, a new password at once', async () => {
    const a = await connect(PGBOUNCER_PORT);
    const b = await connect(PGBOUNCER_PORT);
    const plusOne = (client: pg.Client, n: number) =>
      client.query<{ n: number }>({
        name: 'plus-one',
        text: 'SELECT $1::int + 1 AS n',
        values: [n],
      });
    // `a` holds a server connection in a transaction, so `b` runs on others in between.
    await a.query('BEGIN');
    assert.equal((await plusOne(a, 1)).rows[0]?.n, 2);
    for (let i = 0; i < 10; i++) assert.equal((await plusOne(b, i)).rows[0]?.n, i + 1);
    await a.query('COMMIT');
    for (let i = 0; i < 5; i++) assert.equal((await plusOne(a, i * 10)).rows[0]?.n, i * 10 + 1);

    // 500 clients connected at once; they log in 50 at a time, so a loaded machine copes.
    const many: pg.Client[] = [];
    while (many.length < 500)
      many.push(...(await Promise.all(Array.from({ length: 50 }, () => connect(PGBOUNCER_PORT)))));
    const answers = await Promise.all(many.map((c, i) => c.query('SELECT $1::int AS i', [i])));
    assert.deepEqual(
      answers.map((r) => (r.rows[0] as { i: number }).i),
      Array.from({ length: 500 }, (_, i) => i),
    );
    await Promise.all(many.map((c) => c.end()));
    clients.splice(0, clients.length, ...clients.filter((c) => !many.includes(c)));

    await db.setPassword(NEW_PASSWORD);
    for (const port of [PG_PORT, PGBOUNCER_PORT]) await loginFails(port, PASSWORD);
    password = NEW_PASSWORD;
    for (const port of [PG_PORT, PGBOUNCER_PORT])
      assert.equal((await (await connect(port)).query('SELECT 7 AS n')).rows[0]?.n, 7);
  });

  let backup: Buffer;
  let between = '';

  it('archives WAL through the outbox, backs up, keeps data over stop/start and a crash', async () => {
    const archived = async () =>
      Number(await db.sql('select archived_count from pg_stat_archiver', 'postgres'));
    const before = await archived();
    const file = await db.switchWal();
    await waitFor(() => outbox.taken.has(file), {
      what: `${file} to reach the outbox`,
      timeoutMs: 30_000,
    });
    await waitFor(async () => (await archived()) > before, { what: 'archived_count to grow' });

    await db.sql("CREATE TABLE t (v text); INSERT INTO t VALUES ('base')");
    const b = await db.baseBackup('b1');
    assert.match(b.startLsn, /^[0-9A-F]+\/[0-9A-F]+$/);
    assert.ok(Math.abs(Date.parse(b.time) - Date.now()) < 120_000, b.time);
    backup = await readAll(host, id, b.path);
    const names = tarNames(gunzipSync(backup));
    for (const n of ['backup_label', 'PG_VERSION', 'warren.conf']) assert.ok(names.includes(n), n);
    await host.files.remove(id, `${PG_STAGING}/b1`, true);

    await db.sql("INSERT INTO t VALUES ('one')");
    between = (await db.sql('select clock_timestamp()')).trim();
    await db.sql("INSERT INTO t VALUES ('two')");
    const last = await db.switchWal();
    await waitFor(() => outbox.taken.has(last), {
      what: `${last} to be archived`,
      timeoutMs: 30_000,
    });

    await db.stop();
    assert.equal(await db.isReady(), false);
    await db.start();
    assert.equal(await db.sql('select string_agg(v, $$,$$ order by v) from t'), 'base,one,two\n');

    // A crash: the postmaster is killed; the next start recovers.
    await db.shell(`kill -9 "$(head -n1 ${PG_DATA}/postmaster.pid)"`);
    await waitFor(async () => !(await db.isReady()), { what: 'postgres to be down' });
    await db.start();
    assert.equal(await db.sql('select count(*) from t'), '3\n');
  });

  it('restores the backup with the archived WAL: to the end, and to a point in time', async () => {
    assert.ok(backup && between, 'needs the backup of the previous check');
    const dir = `${PG_STAGING}/restore`;
    const options = (targetTime?: string) => ({
      backup: `${dir}/base.tar.gz`,
      walDir: `${dir}/wal`,
      ...(targetTime !== undefined && { targetTime }),
      password: 'restored-password',
      archiveTimeoutSeconds: 60,
    });
    /** A new database sandbox with the backup and the archived WAL staged, restored. */
    const restored = async (targetTime?: string) => {
      const target = await databaseSandbox();
      await host.files.mkdir(target.id, { path: `${dir}/wal`, parents: true });
      await host.files.write(target.id, `${dir}/base.tar.gz`, Readable.from([backup]));
      for (const [name, data] of outbox.taken)
        await host.files.write(target.id, `${dir}/wal/${name}`, Readable.from([data]));
      await target.pg.restore(options(targetTime));
      return target;
    };
    // Two sandboxes at once: to the end of the WAL, and to the time between two inserts.
    const [toEnd, toTime] = await Promise.all([restored(), restored(between)]);
    const rows = 'select string_agg(v, $$,$$ order by v) from t';
    assert.equal(await toEnd.pg.sql(rows), 'base,one,two\n');
    assert.equal(await toTime.pg.sql(rows), 'base,one\n');
    assert.equal(await toEnd.pg.sql('select pg_is_in_recovery()'), 'f\n');
    const c = await connect(PG_PORT, 'restored-password', toEnd.id);
    assert.equal((await c.query('SELECT count(*)::int AS n FROM items')).rows[0]?.n, 3);
    await assert.rejects(toEnd.pg.restore(options()), /not empty/);
  });
});
