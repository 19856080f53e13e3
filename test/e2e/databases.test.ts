/**
 * Managed PostgreSQL end to end, on real gVisor: real psql and node-postgres
 * through the TLS front door, real PgBouncer, a real archive. One platform
 * and one database are shared by the checks that only read or add rows.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Database } from '@warren/protocol';
import { runCli, startTestPlatform, type TestPlatform } from '../fixture';
import { connectError, createDatabase, dropDatabase, psql, withClient } from '../databases';
import { waitFor } from '../wait';

describe(
  'managed PostgreSQL (real gVisor, real psql and node-postgres)',
  { timeout: 900_000 },
  () => {
    let p: TestPlatform;
    let db: Database;
    const made: string[] = [];

    before(async () => {
      p = await startTestPlatform({ dbPort: 0 });
      db = await createDatabase(p, { label: 'my-app-db' });
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

    it('creates a ready database whose URL works with psql over TLS (require and verify-full)', async () => {
      assert.equal(db.state, 'ready');
      assert.equal(db.version, '17');
      assert.match(db.id, /^db_/);
      assert.match(
        db.connection_url,
        /^postgresql:\/\/app\.db_[0-9a-z]+:[0-9a-z]{32}@localhost:\d+\/app$/,
      );
      assert.match(db.pooled_url, /-pooler:/);
      const r = await psql(
        `${db.connection_url}?sslmode=require`,
        'SELECT current_user, ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()',
      );
      // The front door terminates TLS; the hop into the sandbox is host-local.
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.split('|')[0], 'app');
      const full = await psql(
        `${db.connection_url}?sslmode=verify-full&sslrootcert=${p.dbCaFile}`,
        'SELECT version()',
      );
      assert.equal(full.code, 0, full.stderr);
      assert.match(full.stdout, /PostgreSQL 17/);
      // The CA is served by the API without a token, and it is the one that verifies.
      const ca = await p.api('/v1/databases/ca.pem', { token: null });
      assert.equal(ca.status, 200);
      assert.match(await ca.text(), /BEGIN CERTIFICATE/);
      // Archiving works: once the archiver has passed over it, nothing waits for the archive.
      const lag = await waitFor(
        async () => {
          const got = await p.json<Database>(`/v1/databases/${db.id}`);
          return got.archive_lag_seconds !== null && { seconds: got.archive_lag_seconds };
        },
        { what: 'the archive lag to be measured' },
      );
      assert.equal(lag.seconds, 0);
    });

    it('refuses plain connections, wrong passwords and unknown databases with Postgres errors', async () => {
      const plain = await psql(`${db.connection_url}?sslmode=disable`, 'SELECT 1');
      assert.notEqual(plain.code, 0);
      assert.match(plain.stderr, /TLS/);
      const wrong = db.connection_url.replace(`:${db.password}@`, ':not-the-password@');
      assert.equal(await connectError(p, wrong), '28P01');
      const unknown = db.connection_url.replace(db.id, 'db_doesnotexist0000');
      assert.equal(await connectError(p, unknown), '3D000');
      // verify-full against another CA fails.
      const bad = await psql(
        `${db.connection_url}?sslmode=verify-full&sslrootcert=/etc/ssl/certs/ca-certificates.crt`,
        'SELECT 1',
      );
      assert.notEqual(bad.code, 0);
    });

    it("shows the server's own log and the database's events, by API and CLI", async () => {
      const wrong = db.connection_url.replace(`:${db.password}@`, ':still-not-it@');
      assert.equal(await connectError(p, wrong), '28P01');
      // A reload (the platform's after a restore, a move or a settings change) logs no
      // complaint about Warren's own settings file.
      await p.context.databases.service.provisioner
        .postgres(db.sandbox_id)
        .sql('select pg_reload_conf()');
      const logs = async (lines: number) =>
        (await p.json<{ lines: string[] }>(`/v1/databases/${db.id}/logs?lines=${lines}`)).lines;
      const lines = await waitFor(
        async () => {
          const l = await logs(400);
          return l.some((x) => x.includes('received SIGHUP')) ? l : null;
        },
        { what: 'the reload in the server log' },
      );
      assert.ok(
        lines.some((l) => /password authentication failed for user "app"/.test(l)),
        lines.join('\n'),
      );
      const complaints = lines.filter((l) =>
        /contains errors|skipping missing|cannot be changed/.test(l),
      );
      assert.deepEqual(complaints, []);
      assert.equal((await logs(3)).length, 3);
      const bad = await p.api(`/v1/databases/${db.id}/logs?lines=0`);
      assert.equal(bad.status, 400);

      const cli = await runCli(p, ['db', 'logs', db.id, '-n', '5']);
      assert.equal(cli.code, 0, cli.stderr);
      assert.equal(cli.stdout.trimEnd().split('\n').length, 5);
      const events = await runCli(p, ['db', 'events', db.id]);
      assert.equal(events.code, 0, events.stderr);
      assert.match(events.stdout, /\bready\s+accepting connections/);
    });

    it('hands front-door connections to PostgreSQL itself, as loopback TCP clients (SCRAM, not trust)', async () => {
      // The server took the host connection by descriptor (guest-agent/native/handoff.c):
      // port 0 is the address the handoff gives; a relayed connection has a real port.
      const direct = await psql(
        `${db.connection_url}?sslmode=require`,
        'SELECT inet_client_addr(), inet_client_port()',
      );
      assert.equal(direct.code, 0, direct.stderr);
      assert.equal(direct.stdout.trim(), '127.0.0.1|0');
      // Unix socket clients in the sandbox are trusted: a handed-off one must not be.
      const wrong = db.connection_url.replace(`:${db.password}@`, ':not-the-password@');
      assert.equal(await connectError(p, wrong), '28P01');
      // PgBouncer takes its connections the same way, and asks for the password too.
      const pooled = await psql(`${db.pooled_url}?sslmode=require`, 'SELECT 1');
      assert.equal(pooled.code, 0, pooled.stderr);
      const wrongPooled = db.pooled_url.replace(`:${db.password}@`, ':not-the-password@');
      assert.match(String(await connectError(p, wrongPooled)), /^(28P01|08P01)$/);
    });

    it('cancels a running query from psql (Ctrl-C sends a CancelRequest through the front door)', async () => {
      const url = `${db.connection_url}?sslmode=require`;
      const child = spawn('psql', [url, '-X', '-c', 'SELECT pg_sleep(60)'], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((r) => child.once('close', r));
      try {
        const running = `SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)'`;
        await waitFor(async () => (await psql(url, running)).stdout.trim() === '1', {
          what: 'the query to run',
          timeoutMs: 30_000,
        });
        const sent = Date.now();
        child.kill('SIGINT');
        assert.equal(await exited, 1);
        assert.match(stderr, /canceling statement due to user request/);
        assert.ok(Date.now() - sent < 20_000);
      } finally {
        child.kill('SIGKILL');
      }
    });

    it('runs queries with node-postgres, SCRAM, pgvector', async () => {
      await withClient(p, db.connection_url, async (c) => {
        assert.equal(
          (await c.query('SHOW password_encryption')).rows[0].password_encryption,
          'scram-sha-256',
        );
        await c.query('CREATE EXTENSION IF NOT EXISTS vector');
        await c.query('CREATE TABLE items (id int primary key, embedding vector(3))');
        await c.query(`INSERT INTO items VALUES (1, '[1,2,3]'), (2, '[4,5,6]'), (3, '[1,1,1]')`);
        const near = await c.query(`SELECT id FROM items ORDER BY embedding <-> '[1,1,2]' LIMIT 1`);
        assert.equal(near.rows[0].id, 3);
      });
    });

    it('serves the pooled URL through PgBouncer with prepared statements across transactions', async () => {
      await withClient(p, db.pooled_url, async (c) => {
        await c.query('CREATE TABLE IF NOT EXISTS pooled (n int)');
        for (let i = 0; i < 5; i++) {
          await c.query('BEGIN');
          await c.query({ name: 'ins', text: 'INSERT INTO pooled VALUES ($1)', values: [i] });
          await c.query('COMMIT');
        }
        const r = await c.query({
          name: 'count',
          text: 'SELECT count(*)::int AS n FROM pooled WHERE n >= $1',
          values: [0],
        });
        assert.equal(r.rows[0].n, 5);
      });
      // Many clients at once share the pool.
      const clients = await Promise.all(
        Array.from({ length: 20 }, () =>
          withClient(p, db.pooled_url, async (c) => (await c.query('SELECT 1 AS one')).rows[0].one),
        ),
      );
      assert.equal(clients.length, 20);
      assert.ok(clients.every((v) => v === 1));
    });

    it('rotates the password: the old one fails on both URLs at once', async () => {
      const rotated = await p.json<Database>(`/v1/databases/${db.id}/password`, { method: 'POST' });
      const old = db;
      db = rotated;
      assert.notEqual(rotated.password, old.password);
      assert.equal(await connectError(p, old.connection_url), '28P01');
      // PgBouncer reports its own authentication failures with SQLSTATE 08P01.
      assert.match(String(await connectError(p, old.pooled_url)), /^(28P01|08P01)$/);
      for (const url of [rotated.connection_url, rotated.pooled_url])
        assert.equal(await connectError(p, url), undefined);
    });

    it('is driven by the SDK and the CLI (warren db create, ls, psql, rm)', async () => {
      const created = await runCli(p, ['db', 'create', 'cli-db', '--json']);
      assert.equal(created.code, 0, created.stderr);
      const info = JSON.parse(created.stdout) as Database;
      made.push(info.id);
      const ls = await runCli(p, ['db', 'ls']);
      assert.match(ls.stdout, new RegExp(info.id));
      const q = await runCli(p, ['db', 'psql', info.id, '-c', 'SELECT 40 + 2']);
      assert.equal(q.code, 0, q.stderr);
      assert.match(q.stdout, /42/);
      const { Database: Db } = await import('@warren/sdk');
      const conn = { apiUrl: p.url, apiKey: p.adminToken };
      assert.equal((await Db.get(info.id, conn)).label, 'cli-db');
      assert.ok((await Db.events(info.id, conn)).some((e) => e.kind === 'ready'));
      const rm = await runCli(p, ['db', 'rm', info.id]);
      assert.equal(rm.code, 0, rm.stderr);
      made.pop();
    });
  },
);
