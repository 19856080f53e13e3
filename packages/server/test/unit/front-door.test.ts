/**
 * The database front door with real clients (node-postgres and psql) against
 * a fake Postgres: TLS and certificates, the three ways of routing, errors
 * answered at once, activity accounting, cancel forwarding, and teardown.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { WarrenError } from '@warren/protocol';
import { FrontDoor, type FrontDoorRoute } from '../../src/databases/front-door/server';
import { openDatabaseTls, type DatabaseTls } from '../../src/databases/front-door/tls';
import { waitFor, withDeadline } from '../../../../test/wait';
import { FakePostgres } from './fake-postgres';

const DB = 'db_0123456789abcdefghij';
const SLOW = 'db_slow0000000000000000';
const NOT_READY = 'db_notready00000000000';
const MISSING = 'db_missing0000000000000';
const DOMAIN = 'db.warren.test';
const hasPsql = (() => {
  try {
    execFileSync('psql', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
const needPsql = hasPsql
  ? {}
  : { skip: 'psql is not installed (apt-get install postgresql-client)' };

/** A promise and its resolve: a database that is being woken until the test says so. */
function opening(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('database front door', () => {
  let dir: string;
  let tls: DatabaseTls;
  let fake: FakePostgres;
  let door: FrontDoor;
  let port: number;
  const calls: { route: FrontDoorRoute; startup: { user: string; database: string } }[] = [];
  const opened: string[] = [];
  const closed: string[] = [];
  /** What a connect() to SLOW waits for (a database being woken). */
  let gate = opening();

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'warren-front-door-'));
    tls = await openDatabaseTls(join(dir, 'tls'), {
      names: ['DNS:localhost', 'IP:127.0.0.1', 'IP:::1', `*.${DOMAIN}`],
    });
    fake = await new FakePostgres().start();
    door = new FrontDoor({
      tls: tls.context,
      sniDomain: DOMAIN,
      startupTimeoutMs: 1000,
      async connect(route, startup) {
        calls.push({ route, startup });
        if (route.databaseId === NOT_READY)
          throw new WarrenError('DATABASE_NOT_READY', `database ${NOT_READY} is recovering`);
        if (route.databaseId === SLOW) await gate.promise;
        else if (route.databaseId !== DB)
          throw new WarrenError('DATABASE_NOT_FOUND', `no database ${route.databaseId}`);
        return fake.open();
      },
      onOpen: (id) => opened.push(id),
      onClose: (id) => closed.push(id),
    });
    port = await door.listen(0, '127.0.0.1');
  });

  after(async () => {
    await door.close();
    await fake.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A pg client over TLS (not verified unless `ssl` says so). */
  function client(config: pg.ClientConfig = {}): pg.Client {
    const c = new pg.Client({
      host: '127.0.0.1',
      port,
      user: `app.${DB}`,
      database: 'app',
      ssl: { rejectUnauthorized: false },
      connectionTimeoutMillis: 10_000,
      ...config,
    });
    c.on('error', () => undefined);
    return c;
  }

  async function selectOne(config: pg.ClientConfig = {}): Promise<string> {
    const c = client(config);
    try {
      await c.connect();
      const r = await c.query('select 1');
      return String(r.rows[0]['?column?']);
    } finally {
      await c.end().catch(() => undefined);
    }
  }

  /** Connects with `config` and returns the error the front door answered with. */
  async function refusal(config: pg.ClientConfig): Promise<{ code?: string; message: string }> {
    const c = client(config);
    try {
      await c.connect();
    } catch (err) {
      return err as { code?: string; message: string };
    } finally {
      await c.end().catch(() => undefined);
    }
    throw new Error('the connection was accepted');
  }

  function psql(conninfo: string): Promise<{ ok: boolean; out: string }> {
    return new Promise((resolve) => {
      execFile(
        'psql',
        ['-X', '-w', '-A', '-t', '-c', 'select 1', '-d', `${conninfo} port=${port}`],
        { timeout: 20_000, env: { ...process.env, PGCONNECT_TIMEOUT: '10' } },
        (err, stdout, stderr) => resolve({ ok: !err, out: `${stdout}${stderr}`.trim() }),
      );
    });
  }

  const lastCall = () => calls[calls.length - 1]!;
  const lastSession = () => fake.sessions[fake.sessions.length - 1]!;

  describe('TLS', () => {
    it('pg: sslmode=require works', async () => {
      assert.equal(await selectOne(), '1');
    });

    it('pg: verified against the install CA for localhost, and not against another CA', async () => {
      assert.equal(await selectOne({ host: 'localhost', ssl: { ca: tls.caPem } }), '1');
      const other = await openDatabaseTls(join(dir, 'other'), { names: ['localhost'] });
      const err = await refusal({ host: 'localhost', ssl: { ca: other.caPem } });
      assert.match(err.message, /certificate/);
    });

    it('psql: sslmode=require and verify-full work; a wrong CA fails', needPsql, async () => {
      const base = `host=127.0.0.1 user=app.${DB} dbname=app`;
      assert.deepEqual(await psql(`${base} sslmode=require`), { ok: true, out: '1' });
      const verify = `host=localhost user=app.${DB} dbname=app sslmode=verify-full`;
      assert.deepEqual(await psql(`${verify} sslrootcert=${tls.caFile}`), { ok: true, out: '1' });
      const other = await openDatabaseTls(join(dir, 'other'), { names: ['localhost'] });
      const bad = await psql(`${verify} sslrootcert=${other.caFile}`);
      assert.equal(bad.ok, false);
      assert.match(bad.out, /certificate verify failed/);
    });

    it('a plain connection is refused with 28000 and how to fix it', needPsql, async () => {
      const err = await refusal({ ssl: false });
      assert.equal(err.code, '28000');
      assert.match(err.message, /Warren requires TLS: connect with sslmode=require/);
      const r = await psql(`host=127.0.0.1 user=app.${DB} sslmode=disable`);
      assert.equal(r.ok, false);
      assert.match(r.out, /Warren requires TLS/);
    });

    it('keeps the certificate while the names stay, and makes a new one when they change', async () => {
      const names = ['DNS:localhost', 'IP:127.0.0.1', 'IP:::1', `*.${DOMAIN}`];
      const pem = () => readFile(join(dir, 'tls', 'server.pem'), 'utf8');
      const before = await pem();
      await openDatabaseTls(join(dir, 'tls'), { names: [...names].reverse() });
      assert.equal(await pem(), before, 'same names in another order: same certificate');
      const again = await openDatabaseTls(join(dir, 'tls'), { names: [...names, 'pg.example'] });
      assert.notEqual(await pem(), before);
      assert.equal(again.caPem, tls.caPem, 'the CA stays');
      for (const key of ['ca.key', 'server.key'])
        assert.equal((await stat(join(dir, 'tls', key))).mode & 0o777, 0o600, key);
      await openDatabaseTls(join(dir, 'tls'), { names });
    });
  });

  describe('routing', () => {
    it('by SNI: <id>.<domain>, with psql and pg', needPsql, async () => {
      const r = await psql(`host=${DB}.${DOMAIN} hostaddr=127.0.0.1 user=app sslmode=require`);
      assert.deepEqual(r, { ok: true, out: '1' });
      assert.deepEqual(lastCall().route, { databaseId: DB, pooled: false });
      assert.equal(lastSession().params.get('user'), 'app');
      // db-<rest> spells the same endpoint in a real host name, verifiable by the wildcard.
      const host = `${DB.replace('_', '-')}-pooler.${DOMAIN}`;
      const verified = `host=${host} hostaddr=127.0.0.1 user=app sslmode=verify-full sslrootcert=${tls.caFile}`;
      assert.deepEqual(await psql(verified), { ok: true, out: '1' });
      assert.deepEqual(lastCall().route, { databaseId: DB, pooled: true });
      const viaPg = client({ user: 'app', ssl: { ca: tls.caPem, servername: host } });
      await viaPg.connect();
      await viaPg.end();
      assert.deepEqual(lastCall().route, { databaseId: DB, pooled: true });
    });

    it('by the options endpoint, which is taken out of the options', async () => {
      const options = `-c search_path=public endpoint=${DB}-pooler -c work_mem=8MB`;
      assert.equal(await selectOne({ user: 'app', options }), '1');
      assert.deepEqual(lastCall().route, { databaseId: DB, pooled: true });
      assert.equal(lastSession().params.get('options'), '-c search_path=public -c work_mem=8MB');
      assert.equal(await selectOne({ user: 'app', options: `-c endpoint=${DB}` }), '1');
      assert.equal(lastSession().params.has('options'), false);
      assert.deepEqual(lastCall().route, { databaseId: DB, pooled: false });
    });

    it('by the user name suffix, stripped before Postgres sees it', async () => {
      assert.equal(await selectOne({ user: `app.${DB}-pooler`, database: 'shop' }), '1');
      assert.deepEqual(lastCall(), {
        route: { databaseId: DB, pooled: true },
        startup: { user: 'app', database: 'shop' },
      });
      assert.equal(lastSession().params.get('user'), 'app');
      assert.equal(lastSession().params.get('database'), 'shop');
    });

    it('without an endpoint, or with conflicting ones, explains the three ways', async () => {
      const none = await refusal({ user: 'app' });
      assert.equal(none.code, '08004');
      assert.match(none.message, /no database endpoint/);
      const both = await refusal({ user: `app.${DB}`, options: `endpoint=${DB}-pooler` });
      assert.equal(both.code, '08004');
      assert.match(both.message, /conflicting endpoints/);
    });
  });

  describe('failures answer at once', () => {
    it('an unknown database: 3D000', async () => {
      const started = Date.now();
      const err = await refusal({ user: `app.${MISSING}` });
      assert.equal(err.code, '3D000');
      assert.equal(err.message, `database "${MISSING}" does not exist`);
      assert.ok(Date.now() - started < 2000);
    });

    it('a database that is not ready: 57P03 with the reason', async () => {
      const err = await refusal({ user: `app.${NOT_READY}` });
      assert.equal(err.code, '57P03');
      assert.match(err.message, /recovering/);
    });

    it('garbage, an SSL request with data behind it, or silence: 08P01, then closed', async () => {
      const garbage = await exchange(port, Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
      assert.match(garbage, /^E.*C08P01.*invalid length/s);
      const ssl = Buffer.from([0, 0, 0, 8, 4, 0xd2, 0x16, 0x2f]);
      const pipelined = await exchange(port, Buffer.concat([ssl, Buffer.from('x')]));
      assert.match(pipelined, /C08P01.*unencrypted data after/s);
      const silent = await exchange(port, Buffer.alloc(0));
      assert.match(silent, /C08P01.*timeout/s);
    });

    it('a GSSENC request is declined with N', async () => {
      const gss = Buffer.from([0, 0, 0, 8, 4, 0xd2, 0x16, 0x30]);
      assert.match(await exchange(port, gss), /^N/);
    });
  });

  describe('connections', () => {
    it('a slow connect() holds the client, then works', async () => {
      gate = opening();
      const n = calls.length;
      const result = selectOne({ user: `app.${SLOW}` });
      await waitFor(() => calls.length > n, { what: 'connect() to be called' });
      await delay(200);
      assert.equal(door.clients(), 1, 'the client is held');
      assert.equal(door.connections(), 0);
      gate.resolve();
      assert.equal(await result, '1');
    });

    it('a client that gives up during a slow connect() is let go, with its backend', async () => {
      gate = opening();
      const [n, o] = [calls.length, opened.length];
      const c = client({ user: `app.${SLOW}` });
      const attempt = c.connect().catch(() => undefined);
      await waitFor(() => calls.length > n, { what: 'connect() to be called' });
      (c as unknown as { connection: { stream: Socket } }).connection.stream.destroy();
      await attempt;
      await waitFor(() => door.clients() === 0, { what: 'the front door to drop the client' });
      gate.resolve();
      await waitFor(() => fake.live === 0, { what: 'the late backend stream to be closed' });
      assert.equal(opened.length, o, 'never counted as open');
    });

    it('counts opens and closes per database', async () => {
      await waitFor(() => door.connections() === 0, { what: 'earlier connections to close' });
      const [o, c] = [opened.length, closed.length];
      const a = client();
      await a.connect();
      assert.equal(door.connections(DB), 1);
      assert.deepEqual(opened.slice(o), [DB]);
      await a.end();
      await waitFor(() => closed.length === c + 1, { what: 'onClose' });
      assert.deepEqual(closed.slice(c), [DB]);
      assert.equal(door.connections(DB), 0);
      await waitFor(() => fake.live === 0, { what: 'the backend side to close' });
    });

    it("passes the backend's last words on before closing the client", async () => {
      const a = client();
      await a.connect();
      await assert.rejects(a.query('terminate'), (err: { code?: string; message: string }) => {
        assert.equal(err.code, '57P01');
        assert.match(err.message, /administrator command/);
        return true;
      });
      await a.end().catch(() => undefined);
      await waitFor(() => door.connections() === 0, { what: 'the connection to be torn down' });
    });

    it('forwards a CancelRequest to the backend that issued the key', async () => {
      const a = client();
      await a.connect();
      const { pid, secret } = lastSession();
      const cancel = Buffer.alloc(16);
      cancel.writeUInt32BE(16, 0);
      cancel.writeUInt32BE(80877102, 4);
      cancel.writeUInt32BE(pid, 8);
      cancel.writeUInt32BE(secret, 12);
      assert.equal(await exchange(port, cancel), '', 'nothing is answered');
      await waitFor(() => fake.cancels.some((k) => k.pid === pid && k.secret === secret), {
        what: 'the cancel to reach the backend',
      });
      const before = fake.cancels.length;
      cancel.writeUInt32BE((secret + 1) >>> 0, 12);
      assert.equal(await exchange(port, cancel), '', 'an unknown key is dropped silently');
      assert.equal(fake.cancels.length, before);
      await a.end();
    });

    it('close() ends open client connections and the listener', async () => {
      const own = new FrontDoor({ tls: tls.context, connect: () => fake.open() });
      const ownPort = await own.listen(0, '127.0.0.1');
      const a = client({ port: ownPort });
      await a.connect();
      const ended = new Promise((resolve) => a.once('end', resolve));
      const held = await rawSocket(ownPort); // not yet past the startup
      assert.equal(own.connections(), 1);
      await withDeadline(own.close(), 5000, 'close()');
      await withDeadline(ended, 5000, 'the client to see the end');
      await withDeadline(closedSocket(held), 5000, 'the pending connection to close');
      assert.equal(own.connections(), 0);
      await assert.rejects(rawSocket(ownPort), /ECONNREFUSED/);
      await a.end().catch(() => undefined);
    });
  });
});

function rawSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = netConnect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

function closedSocket(s: Socket): Promise<void> {
  return new Promise((resolve) => {
    if (s.destroyed) resolve();
    else s.once('close', () => resolve());
    s.resume();
  });
}

/** Sends `bytes` on a plain connection and returns what comes back before the close (or 3 s). */
async function exchange(port: number, bytes: Buffer): Promise<string> {
  const s = await rawSocket(port);
  s.on('error', () => undefined);
  const got: Buffer[] = [];
  s.on('data', (d: Buffer) => {
    got.push(d);
    // An 'N' or 'S' answer leaves the connection open: it waits for the next packet.
    if (got.length === 1 && d.length === 1) s.destroy();
  });
  if (bytes.length) s.write(bytes);
  await withDeadline(closedSocket(s), 3000, 'the front door to close the connection');
  return Buffer.concat(got).toString('latin1');
}
