/**
 * Lifecycle logic of the control plane and host agent with the FAKE driver
 * (guest agents as plain host processes): memory admission, clean failure,
 * TTL expiry, restart reconciliation; and the store's list pagination and
 * metadata filter. No isolation is involved, so nothing here is a feature test.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { WarrenError, type SandboxState } from '@warren/protocol';
import { startPlatform, type Platform, type StartOptions } from '../../src/index';
import { openSqliteStore } from '../../src/store/open';
import type { SandboxRow, Store } from '../../src/store/store';
import { FakeDriver } from '../../../host-agent/src/runtime/fake/driver';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const TEMPLATE = 'fake';
let templatesDir = '';

/** A template record written by hand (see TemplateCatalog.read): the fake driver ignores its dirs. */
function writeTemplate(dir: string): void {
  const tdir = join(dir, TEMPLATE);
  mkdirSync(join(tdir, 'rootfs'), { recursive: true });
  mkdirSync(join(tdir, 'snapshot'), { recursive: true });
  const record = {
    id: 'tpl_fake000000000000',
    name: TEMPLATE,
    state: 'ready',
    default_cpu: 1,
    default_memory_mb: 128,
    max_cpu: 2,
    max_memory_mb: 1024,
    rootfs_bytes: 0,
    snapshot_bytes: 0,
    built_at: new Date().toISOString(),
    rootfs: join(tdir, 'rootfs'),
    snapshot: join(tdir, 'snapshot'),
    guest_key: 'fake',
    runtime_version: 'fake fake-1',
  };
  writeFileSync(join(tdir, 'template.json'), JSON.stringify(record, null, 2));
}

interface Fx {
  p: Platform;
  home: string;
  driver: FakeDriver;
  api(path: string, init?: { method?: string; json?: unknown }): Promise<Response>;
  json(path: string, init?: { method?: string; json?: unknown }): Promise<Json>;
  create(body?: Record<string, unknown>): Promise<Json>;
  reservedMb(): Promise<number>;
  rowIds(): Promise<string[]>;
  dirs(): string[];
}

async function start(home: string, overrides: Partial<StartOptions> = {}): Promise<Fx> {
  const p = await startPlatform({
    home,
    host: '127.0.0.1',
    port: 0,
    driver: 'fake',
    templates: [],
    templatesDir,
    memoryBudgetMb: 1000,
    // Sweeps happen when a test calls sweep(), never behind its back.
    sweepIntervalMs: 3_600_000,
    readyTimeoutMs: 15_000,
    logger: false,
    destroyOnClose: true,
    onProgress: () => undefined,
    ...overrides,
  });
  const api: Fx['api'] = (path, init = {}) =>
    fetch(p.url + path, {
      method: init.method ?? 'GET',
      headers: {
        authorization: `Bearer ${p.adminToken}`,
        ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: init.json !== undefined ? JSON.stringify(init.json) : undefined,
    });
  const json: Fx['json'] = async (path, init) => {
    const res = await api(path, init);
    const body = (await res.json()) as Json;
    if (!res.ok)
      throw new Error(`${init?.method ?? 'GET'} ${path} -> ${res.status} ${JSON.stringify(body)}`);
    return body;
  };
  return {
    p,
    home,
    driver: p.context.host.driver as FakeDriver,
    api,
    json,
    create: (body = {}) =>
      json('/v1/sandboxes', { method: 'POST', json: { template: TEMPLATE, ...body } }),
    reservedMb: async () => (await json('/v1/health')).hosts[0].memory_reserved_mb as number,
    rowIds: async () =>
      (await p.context.store.db.selectFrom('sandboxes').select('id').execute()).map((r) => r.id),
    dirs: () => readdirSync(join(home, 'sandboxes')).sort(),
  };
}

async function errorOf(
  res: Response,
): Promise<{ status: number; code: string; message: string; details: Json }> {
  const body = (await res.json()) as {
    error: { code: string; message: string; details?: unknown };
  };
  return {
    status: res.status,
    code: body.error.code,
    message: body.error.message,
    details: body.error.details,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

before(() => {
  templatesDir = mkdtempSync('/tmp/wlt-');
  writeTemplate(templatesDir);
});
after(() => {
  // Also holds the guest bundle the host agent builds on first use.
  rmSync(templatesDir, { recursive: true, force: true });
});

describe('admission, failure and TTL (fake driver)', () => {
  let home = '';
  let fx: Fx;
  before(async () => {
    home = mkdtempSync('/tmp/wl-');
    fx = await start(home);
  });
  after(async () => {
    try {
      await fx?.p.close();
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('admits against the memory budget and refuses what does not fit, leaving nothing behind', async () => {
    const first = await fx.create({ memory_mb: 600 });
    const ids = [first.id as string];
    try {
      assert.equal(first.state, 'running');
      assert.equal(first.memory_mb, 600);
      assert.equal(await fx.reservedMb(), 600);
      const rows = await fx.rowIds();
      const dirs = fx.dirs();
      const restores = fx.driver.calls.filter((c) => c.op === 'restore').length;

      const refused = await fx.api('/v1/sandboxes', {
        method: 'POST',
        json: { template: TEMPLATE, memory_mb: 600 },
      });
      const err = await errorOf(refused);
      assert.equal(err.status, 503);
      assert.equal(err.code, 'INSUFFICIENT_CAPACITY');
      assert.deepEqual(err.details, { requested_mb: 600, free_mb: 400 });

      assert.deepEqual(await fx.rowIds(), rows, 'no store row for the refused sandbox');
      const listed = await fx.json('/v1/sandboxes');
      assert.deepEqual(
        listed.items.map((s: Json) => s.id),
        [first.id],
      );
      assert.deepEqual((await fx.json('/v1/sandboxes?state=creating')).items, []);
      assert.deepEqual(fx.dirs(), dirs, 'no directory for the refused sandbox');
      assert.equal(await fx.reservedMb(), 600, 'reservation unchanged');
      assert.equal(
        fx.driver.calls.filter((c) => c.op === 'restore').length,
        restores,
        'refused without trying',
      );

      // Exactly the rest of the budget still fits; then nothing more does.
      const rest = await fx.create({ memory_mb: 400 });
      ids.push(rest.id);
      assert.equal(await fx.reservedMb(), 1000);
      const full = await fx.api('/v1/sandboxes', {
        method: 'POST',
        json: { template: TEMPLATE, memory_mb: 64 },
      });
      assert.equal((await errorOf(full)).code, 'INSUFFICIENT_CAPACITY');

      // Deleting gives the memory back.
      await fx.json(`/v1/sandboxes/${rest.id}`, { method: 'DELETE' });
      assert.equal(await fx.reservedMb(), 600);
      const health = await fx.json('/v1/health');
      assert.equal(health.hosts[0].sandboxes, 1);
      assert.equal(health.runtime.driver, 'fake');
    } finally {
      for (const id of ids) await fx.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    }
    assert.equal(await fx.reservedMb(), 0);
  });

  it('a failed restore is a RUNTIME_ERROR that leaves no row, no directory and no reservation', async () => {
    await fx.p.context.host.settle(); // earlier deletes finish their teardown in the background
    const rows = await fx.rowIds();
    const dirs = fx.dirs();
    const reserved = await fx.reservedMb();
    const calls = fx.driver.calls.length;

    fx.driver.failNext('restore');
    const res = await fx.api('/v1/sandboxes', {
      method: 'POST',
      json: { template: TEMPLATE, memory_mb: 256 },
    });
    const err = await errorOf(res);
    assert.equal(err.status, 500);
    assert.equal(err.code, 'RUNTIME_ERROR');
    assert.match(err.message, /injected restore failure/);

    // The host agent undid its part: the runtime was told to destroy the half-made sandbox.
    const made = fx.driver.calls.slice(calls);
    const restore = made.find((c) => c.op === 'restore');
    assert.ok(restore, `calls: ${JSON.stringify(made)}`);
    assert.ok(
      made.some((c) => c.op === 'destroy' && c.id === restore.id),
      'runtime cleanup',
    );
    assert.ok(!(await fx.driver.list()).includes(restore.id));

    assert.deepEqual(await fx.rowIds(), rows, 'no store row');
    assert.equal((await fx.api(`/v1/sandboxes/${restore.id}`)).status, 404);
    assert.deepEqual(fx.dirs(), dirs, 'no directory');
    assert.ok(!existsSync(join(fx.home, 'sandboxes', restore.id)));
    assert.equal(await fx.reservedMb(), reserved, 'reservation released');

    // The failure was one-shot: the next create works.
    const ok = await fx.create({ memory_mb: 256 });
    try {
      assert.equal(ok.state, 'running');
      assert.equal(await fx.reservedMb(), reserved + 256);
    } finally {
      await fx.json(`/v1/sandboxes/${ok.id}`, { method: 'DELETE' });
    }
  });

  it('TTL: an idle sandbox expires at the sweep; activity pushes expires_at forward', async () => {
    const idle = await fx.create({ ttl_seconds: 1 });
    const busy = await fx.create({ ttl_seconds: 1 });
    const t0 = Date.now(); // both expire at most 1 s after this
    try {
      assert.equal(busy.ttl_seconds, 1);
      const firstExpiry = Date.parse(busy.expires_at);
      await sleep(500);
      const ran = await fx.json(`/v1/sandboxes/${busy.id}/exec`, {
        method: 'POST',
        json: { cmd: 'true' },
      });
      assert.equal(ran.exit_code, 0);
      const touched = await fx.json(`/v1/sandboxes/${busy.id}`);
      const newExpiry = Date.parse(touched.expires_at);
      assert.ok(newExpiry >= firstExpiry + 450, `expires_at moved ${newExpiry - firstExpiry} ms`);
      assert.equal(newExpiry - Date.parse(touched.last_activity_at), 1000);

      // 1.2 s after both were created: the idle one is past its TTL, the busy one is not.
      await sleep(t0 + 1200 - Date.now());
      assert.ok(Date.now() < newExpiry, 'the busy one has not expired yet');
      await fx.p.sweeper.sweep();
      const gone = await fx.json(`/v1/sandboxes/${idle.id}`);
      assert.deepEqual([gone.state, gone.stop_reason], ['stopped', 'ttl_expired']);
      assert.ok(gone.stopped_at);
      assert.equal((await fx.json(`/v1/sandboxes/${busy.id}`)).state, 'running');
      assert.equal(fx.p.context.host.has(idle.id), false);
      const refused = await fx.api(`/v1/sandboxes/${idle.id}/exec`, {
        method: 'POST',
        json: { cmd: 'true' },
      });
      assert.equal((await errorOf(refused)).code, 'SANDBOX_NOT_RUNNING');

      // Without further activity the busy one expires too.
      await sleep(newExpiry + 200 - Date.now());
      await fx.p.sweeper.sweep();
      const later = await fx.json(`/v1/sandboxes/${busy.id}`);
      assert.deepEqual([later.state, later.stop_reason], ['stopped', 'ttl_expired']);
      await fx.p.context.host.settle();
      assert.equal(await fx.reservedMb(), 0);
      assert.deepEqual(fx.dirs(), []);
      const events = await fx.p.context.store.sandboxEvents(idle.id);
      assert.deepEqual(
        events.map((e) => `${e.to_state}:${e.cause}`),
        [
          'creating:create',
          'running:restored from template snapshot',
          'stopping:ttl_expired',
          'stopped:ttl_expired',
        ],
      );
    } finally {
      for (const id of [idle.id, busy.id])
        await fx.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    }
  });
});

describe('restart reconciliation (fake driver)', () => {
  it('reattaches to a sandbox still running and marks one that died meanwhile lost', async () => {
    const home = mkdtempSync('/tmp/wl-');
    const survivors = new Map<string, ChildProcess>();
    const originalList = FakeDriver.prototype.list;
    let first: Fx | undefined;
    let second: Fx | undefined;
    try {
      first = await start(home, { destroyOnClose: false });
      const kept = await first.create({ env: { KEPT: 'yes' }, metadata: { role: 'kept' } });
      const doomed = await first.create({ memory_mb: 256 });
      // A background process: still listed by the same guest agent after the restart.
      const bg = await first.json(`/v1/sandboxes/${kept.id}/processes`, {
        method: 'POST',
        json: { cmd: 'true' },
      });
      const running = (first.driver as unknown as { running: Map<string, ChildProcess> }).running;
      for (const [id, child] of running) survivors.set(id, child);
      await first.p.close(); // without destroying: the guest agents keep running
      first = undefined;

      // The doomed sandbox's process dies while the platform is down.
      const victim = survivors.get(doomed.id);
      assert.ok(victim && victim.exitCode === null && victim.signalCode === null);
      const died = new Promise((r) => victim.once('exit', r));
      victim.kill('SIGKILL');
      await died;

      // The fake keeps its sandboxes in memory, so a new FakeDriver knows none of them.
      // Stand in for a runtime whose state outlives the process (as runsc's --root does):
      // the next driver adopts the processes that are still alive.
      FakeDriver.prototype.list = async function (this: FakeDriver) {
        const mine = (this as unknown as { running: Map<string, ChildProcess> }).running;
        for (const [id, child] of survivors) {
          if (child.exitCode === null && child.signalCode === null) mine.set(id, child);
        }
        survivors.clear();
        return originalList.call(this);
      };
      second = await start(home);
      FakeDriver.prototype.list = originalList;

      const back = await second.json(`/v1/sandboxes/${kept.id}`);
      assert.equal(back.state, 'running');
      assert.deepEqual(back.metadata, { role: 'kept' });
      const r = await second.json(`/v1/sandboxes/${kept.id}/exec`, {
        method: 'POST',
        json: { cmd: 'sh', args: ['-c', 'echo "$KEPT"'] },
      });
      assert.equal(r.stdout, 'yes\n', 'the sandbox env came back with the hello');
      const procs = await second.json(`/v1/sandboxes/${kept.id}/processes`);
      assert.ok(
        procs.items.some((p: Json) => p.pid === bg.pid),
        'the same guest agent answers (it still lists the earlier process)',
      );

      const lost = await second.json(`/v1/sandboxes/${doomed.id}`);
      assert.deepEqual([lost.state, lost.stop_reason], ['stopped', 'lost']);
      const exec = await second.api(`/v1/sandboxes/${doomed.id}/exec`, {
        method: 'POST',
        json: { cmd: 'true' },
      });
      assert.equal((await errorOf(exec)).code, 'SANDBOX_NOT_RUNNING');

      await second.p.context.host.settle();
      assert.deepEqual(second.dirs(), [kept.id]);
      const health = await second.json('/v1/health');
      assert.equal(
        health.hosts[0].memory_reserved_mb,
        kept.memory_mb,
        'only the reattached one is reserved',
      );
      assert.equal(health.hosts[0].sandboxes, 1);
      assert.deepEqual(await second.driver.list(), [kept.id]);
    } finally {
      FakeDriver.prototype.list = originalList;
      await first?.p.close().catch(() => undefined);
      await second?.p.close().catch(() => undefined);
      for (const child of survivors.values()) child.kill('SIGKILL');
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('store: list pagination and metadata filter', () => {
  let dir: string;
  let store: Store;
  let n = 0;

  const row = (over: Partial<SandboxRow> & { created_at: string }): SandboxRow => ({
    id: `sbx_${String(n++).padStart(16, '0')}`,
    org_id: 'org_a',
    host_id: 'host_test',
    network: null,
    template: 'fake',
    state: 'running',
    cpu: 1,
    memory_mb: 128,
    metadata: '{}',
    env: '{}',
    ttl_seconds: 60,
    last_activity_at: over.created_at,
    expires_at: over.created_at,
    stopped_at: null,
    stop_reason: null,
    parent_id: null,
    snapshot_id: null,
    lineage: '[]',
    persistent: 0,
    idle_timeout_seconds: 300,
    fork_kind: '',
    preview_auth: 0,
    preview_token_hash: null,
    disk_mb: 1024,
    volumes: '[]',
    ...over,
  });

  const all = async (f: {
    state?: SandboxState;
    metadata?: Record<string, string>;
    limit: number;
    orgId?: string;
  }) => {
    const pages: string[][] = [];
    let cursor: string | undefined;
    do {
      const page = await store.listSandboxes({ orgId: 'org_a', metadata: {}, ...f, cursor });
      pages.push(page.rows.map((r) => r.id));
      cursor = page.nextCursor ?? undefined;
      assert.ok(pages.length < 50, 'pagination terminates');
    } while (cursor);
    return pages;
  };

  before(async () => {
    dir = mkdtempSync('/tmp/wls-');
    store = await openSqliteStore(join(dir, 'test.db'));
    await store.ensureOrganisation('org_a', 'a');
    await store.ensureOrganisation('org_b', 'b');
  });
  after(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('pages newest first, ties broken by id, every row exactly once, last cursor null', async () => {
    const t = (s: number) => new Date(Date.UTC(2030, 0, 1, 0, 0, s)).toISOString();
    // Three rows share one created_at: the cursor must not skip or repeat them.
    const times = [t(1), t(2), t(2), t(2), t(3), t(4), t(5)];
    const rows = times.map((created_at) => row({ created_at, metadata: '{"suite":"page"}' }));
    for (const r of [...rows].reverse()) await store.insertSandbox(r, 'test');
    const expected = [...rows]
      .sort((a, b) =>
        a.created_at === b.created_at
          ? a.id < b.id
            ? 1
            : -1
          : a.created_at < b.created_at
            ? 1
            : -1,
      )
      .map((r) => r.id);
    const f = { metadata: { suite: 'page' } };

    for (const limit of [1, 2, 3, 7, 8]) {
      const pages = await all({ ...f, limit });
      assert.deepEqual(pages.flat(), expected, `limit ${limit}`);
      assert.equal(
        pages.length,
        Math.max(1, Math.ceil(rows.length / limit)),
        `pages at limit ${limit}`,
      );
      for (const p of pages.slice(0, -1)) assert.equal(p.length, limit);
    }

    // Keyset pagination is stable: a row created between two pages does not shift the next page.
    const first = await store.listSandboxes({ orgId: 'org_a', ...f, limit: 3 });
    await store.insertSandbox(row({ created_at: t(9), metadata: '{"suite":"page"}' }), 'test');
    const next = await store.listSandboxes({
      orgId: 'org_a',
      ...f,
      limit: 3,
      cursor: first.nextCursor!,
    });
    assert.deepEqual(
      next.rows.map((r) => r.id),
      expected.slice(3, 6),
    );
  });

  it('rejects a malformed cursor with INVALID_REQUEST', async () => {
    for (const cursor of ['garbage', Buffer.from('no separator').toString('base64url')]) {
      await assert.rejects(
        store.listSandboxes({ orgId: 'org_a', metadata: {}, limit: 5, cursor }),
        (e: unknown) => e instanceof WarrenError && e.code === 'INVALID_REQUEST',
        cursor,
      );
    }
  });

  it('filters by state (stopped only on request) and by organisation', async () => {
    const t = '2031-01-01T00:00:00.000Z';
    const running = row({ created_at: t, metadata: '{"suite":"state"}' });
    const stopped = row({ created_at: t, metadata: '{"suite":"state"}', state: 'stopped' });
    const other = row({ created_at: t, metadata: '{"suite":"state"}', org_id: 'org_b' });
    for (const r of [running, stopped, other]) await store.insertSandbox(r, 'test');
    const f = { metadata: { suite: 'state' }, limit: 10 };
    assert.deepEqual((await all(f)).flat(), [running.id]);
    assert.deepEqual((await all({ ...f, state: 'stopped' })).flat(), [stopped.id]);
    assert.deepEqual((await all({ ...f, state: 'running' })).flat(), [running.id]);
    assert.deepEqual((await all({ ...f, orgId: 'org_b' })).flat(), [other.id]);
  });

  it('matches every metadata pair exactly, including keys with dots and spaces', async () => {
    const t = '2032-01-01T00:00:00.000Z';
    const labelled = (metadata: Record<string, string>) =>
      row({ created_at: t, metadata: JSON.stringify({ suite: 'meta', ...metadata }) });
    const a = labelled({ team: 'red', env: 'prod' });
    const b = labelled({ team: 'red', env: 'dev' });
    const c = labelled({ team: 'blue' });
    const dotted = labelled({ 'app.kubernetes.io/name': 'web' });
    const spaced = labelled({ 'with space': 'v a l', "it's": '[0]' });
    const rows = [a, b, c, dotted, spaced];
    for (const r of rows) await store.insertSandbox(r, 'test');
    const ids = async (metadata: Record<string, string>) =>
      new Set((await all({ metadata: { suite: 'meta', ...metadata }, limit: 100 })).flat());

    assert.deepEqual(await ids({}), new Set(rows.map((r) => r.id)));
    assert.deepEqual(await ids({ team: 'red' }), new Set([a.id, b.id]));
    assert.deepEqual(
      await ids({ team: 'red', env: 'dev' }),
      new Set([b.id]),
      'all pairs must match',
    );
    assert.deepEqual(await ids({ team: 'green' }), new Set());
    assert.deepEqual(await ids({ nokey: 'red' }), new Set());
    assert.deepEqual(await ids({ team: 'RED' }), new Set(), 'values are case-sensitive');
    assert.deepEqual(await ids({ 'app.kubernetes.io/name': 'web' }), new Set([dotted.id]));
    assert.deepEqual(await ids({ 'with space': 'v a l', "it's": '[0]' }), new Set([spaced.id]));
    // Paging a filtered list.
    const pages = await all({ metadata: { suite: 'meta', team: 'red' }, limit: 1 });
    assert.deepEqual(new Set(pages.flat()), new Set([a.id, b.id]));
    assert.equal(pages.length, 2);
  });

  it('matches label keys that contain a double quote or a backslash', async () => {
    const t = '2033-01-01T00:00:00.000Z';
    const labelled = (metadata: Record<string, string>) =>
      row({ created_at: t, metadata: JSON.stringify({ suite: 'odd', ...metadata }) });
    const quoted = labelled({ 'say "hi"': 'yes' });
    const slashed = labelled({ 'a\\b': 'yes' });
    const ab = labelled({ ab: 'x' });
    for (const r of [quoted, slashed, ab]) await store.insertSandbox(r, 'test');
    const ids = async (metadata: Record<string, string>) =>
      (await all({ metadata: { suite: 'odd', ...metadata }, limit: 100 })).flat();
    assert.deepEqual(await ids({ 'a"b': 'x' }), [], 'key a"b is not key ab');
    assert.deepEqual(await ids({ 'say "hi"': 'yes' }), [quoted.id]);
    assert.deepEqual(await ids({ 'a\\b': 'yes' }), [slashed.id]);
  });
});
