/**
 * The isolation matrix: organisation A owns one of each resource, and B's admin
 * key calls every route of the route table that names a resource with A's ids.
 * Each answers 404 with the resource's not-found code (never 403, never data),
 * A's resources are unchanged afterwards, and B's lists never show them. The
 * cases are checked against the table, so a new parameterised route fails this
 * file until it is covered here.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocket } from 'ws';
import { startTestPlatform, type TestPlatform } from '../fixture';
import { CASES, SBX } from '../isolation-cases';
import { previewRequest } from '../preview-app';
import { ROUTE_SCOPES } from '../../packages/server/src/keys/route-scopes';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The HTTP answer to a WebSocket upgrade that must be refused. */
function refusedUpgrade(url: string, key: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${key}` } });
    ws.once('open', () => {
      ws.close();
      reject(new Error(`the upgrade of ${url} was accepted`));
    });
    ws.once('error', () => undefined);
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
  });
}

describe('organisation isolation across every route family (real gVisor)', () => {
  let p: TestPlatform;
  let receiver: Server;
  let orgB: string;
  let keyB: string;
  let keyBId: string;
  let sbxB: string;
  // Organisation A's resources.
  const a = {
    sandbox: '',
    pid: 0,
    pty: '',
    context: '',
    snapshot: '',
    volume: 'iso-vol-a',
    template: 'iso-tpl-a',
    webhook: '',
    key: '',
    keyId: '',
    database: '',
  };
  const call = (token: string, path: string, init: RequestInit & { json?: unknown } = {}) =>
    p.api(path, { ...init, token });
  async function ok(res: Response, status = 200): Promise<Json> {
    const text = await res.text();
    assert.equal(res.status, status, text);
    return text ? JSON.parse(text) : null;
  }
  const asA = (path: string, init: RequestInit & { json?: unknown } = {}) =>
    call(p.adminToken, path, init).then((r) => ok(r, init.method === 'POST' ? 201 : 200));

  /** What A's resources look like; B's calls must leave all of it as it was. */
  async function stateOfA(): Promise<Json> {
    const get = (path: string) => call(p.adminToken, path).then((r) => ok(r));
    const sbx = await get(`/v1/sandboxes/${a.sandbox}`);
    const file = await (
      await call(p.adminToken, `/v1/sandboxes/${a.sandbox}/files?path=/tmp/a.txt`)
    ).text();
    return {
      state: sbx.state,
      metadata: sbx.metadata,
      file,
      tmp: (await get(`/v1/sandboxes/${a.sandbox}/files/list?path=/tmp`)).items
        .map((f: Json) => f.name)
        .sort(),
      process: (await get(`/v1/sandboxes/${a.sandbox}/processes/${a.pid}`)).state,
      pty: await get(`/v1/sandboxes/${a.sandbox}/pty/${a.pty}`),
      contexts: (await get(`/v1/sandboxes/${a.sandbox}/code/contexts`)).items,
      network: await get(`/v1/sandboxes/${a.sandbox}/network`),
      snapshot: (await get(`/v1/snapshots/${a.snapshot}`)).id,
      volume: (await get(`/v1/volumes/${a.volume}`)).name,
      template: (await get(`/v1/templates/${a.template}`)).name,
      webhook: await get(`/v1/webhooks/${a.webhook}`),
      key: (await get('/v1/keys')).items.some((k: Json) => k.id === a.keyId),
      keyWorks: (await call(a.key, '/v1/sandboxes')).status,
      quotas: (await get('/v1/orgs/org_default/quotas')).overrides,
      database: await get(`/v1/databases/${a.database}`).then((d) => [d.label, d.state]),
    };
  }

  before(async () => {
    p = await startTestPlatform();
    receiver = createServer((_req, res) => res.writeHead(204).end());
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const port = (receiver.address() as AddressInfo).port;
    orgB = (await asA('/v1/orgs', { method: 'POST', json: { name: 'iso-b' } })).id;
    const b = await asA('/v1/keys', {
      method: 'POST',
      json: { name: 'b-admin', scopes: ['admin'], org_id: orgB },
    });
    [keyB, keyBId] = [b.key, b.id];
    const key = await asA('/v1/keys', {
      method: 'POST',
      json: { name: 'a', scopes: ['sandboxes:read'] },
    });
    [a.key, a.keyId] = [key.key, key.id];
    const sandbox = (token: string) =>
      call(token, '/v1/sandboxes', {
        method: 'POST',
        json: { template: 'base', memory_mb: 128 },
      }).then((r) => ok(r, 201));
    const buildTemplate = async () => {
      const build = await call(p.adminToken, '/v1/templates', {
        method: 'POST',
        json: { name: a.template, base: 'base', steps: [{ run: 'echo a > /a' }] },
      });
      const last = JSON.parse((await build.text()).trim().split('\n').at(-1)!) as Json;
      assert.equal(last.type, 'done', JSON.stringify(last));
    };
    const database = async () => {
      a.database = (
        await asA('/v1/databases', { method: 'POST', json: { label: 'iso-a', disk_mb: 256 } })
      ).id;
    };
    const [sa, sb] = await Promise.all([
      sandbox(p.adminToken),
      sandbox(keyB),
      buildTemplate(),
      database(),
    ]);
    [a.sandbox, sbxB] = [sa.id, sb.id];
    const s = `/v1/sandboxes/${a.sandbox}`;
    await ok(
      await call(p.adminToken, `${s}/files?path=/tmp/a.txt`, {
        method: 'PUT',
        headers: { 'content-type': 'application/octet-stream' },
        body: 'a secret of A',
      }),
    );
    a.pid = (
      await asA(`${s}/processes`, { method: 'POST', json: { cmd: 'sleep', args: ['600'] } })
    ).pid;
    a.pty = (await asA(`${s}/pty`, { method: 'POST', json: { cols: 80, rows: 24 } })).pty_id;
    a.context = (
      await asA(`${s}/code/contexts`, { method: 'POST', json: { language: 'bash' } })
    ).id;
    a.snapshot = (await asA(`${s}/snapshots`, { method: 'POST' })).id;
    await asA('/v1/volumes', { method: 'POST', json: { name: a.volume, size_mb: 8 } });
    a.webhook = (
      await asA('/v1/webhooks', {
        method: 'POST',
        json: { url: `http://127.0.0.1:${port}/hook`, events: ['sandbox.*'] },
      })
    ).id;
  });

  after(async () => {
    if (!p) return;
    const del = (path: string, token = p.adminToken) =>
      call(token, path, { method: 'DELETE' }).catch(() => undefined);
    try {
      for (const id of [a.sandbox, sbxB].filter(Boolean)) await del(`/v1/sandboxes/${id}`);
      if (a.snapshot) await del(`/v1/snapshots/${a.snapshot}`);
      await del(`/v1/volumes/${a.volume}`);
      await del(`/v1/templates/${a.template}`);
      if (a.webhook) await del(`/v1/webhooks/${a.webhook}`);
      if (a.database) await del(`/v1/databases/${a.database}`);
      for (const id of [a.keyId, keyBId].filter(Boolean)) await del(`/v1/keys/${id}`);
    } finally {
      await p.stop();
      receiver?.close();
    }
  });

  it('the cases cover exactly the parameterised routes of the table', () => {
    const parameterised = Object.keys(ROUTE_SCOPES).filter((r) => r.includes('/:'));
    assert.deepEqual(Object.keys(CASES).sort(), parameterised.sort());
  });

  it("every route answers 404 for another organisation's resource, and changes nothing", async () => {
    const before = await stateOfA();
    assert.equal(before.state, 'running');
    assert.equal(before.file, 'a secret of A');
    assert.equal(before.process, 'running');
    assert.equal(before.pty.state, 'running');
    assert.deepEqual(
      before.contexts.map((c: Json) => c.id),
      [a.context],
    );
    assert.equal(before.keyWorks, 200);
    const params: Record<string, string> = {
      pid: String(a.pid),
      pty_id: a.pty,
      context_id: a.context,
      execution_id: 'exe_0123456789abcdef0123',
      snapshot_id: a.snapshot,
      message_id: 'msg_0123456789abcdef',
      action: 'hover',
    };
    const byFamily: Record<string, string> = {
      sandboxes: a.sandbox,
      databases: a.database,
      keys: a.keyId,
      orgs: 'org_default',
      webhooks: a.webhook,
      templates: a.template,
      volumes: a.volume,
      hosts: 'host_local',
    };
    for (const [route, c] of Object.entries(CASES)) {
      const [method, url] = route.split(' ') as [string, string];
      const family = url.split('/')[2]!;
      const path = url.replace(/:(\w+)/g, (_m, name: string) =>
        name === 'id' || name === 'name' ? byFamily[family]! : params[name]!,
      );
      const init: RequestInit & { json?: unknown } = { method, json: c.json };
      if (c.raw) init.body = c.raw.body;
      if (c.raw) init.headers = { 'content-type': c.raw.type };
      const res = await call(keyB, c.query ? `${path}?${c.query}` : path, init);
      const text = await res.text();
      assert.equal(res.status, c.status ?? 404, `${route}: ${text}`);
      assert.equal(JSON.parse(text).error.code, c.code, `${route}: ${text}`);
      assert.ok(!text.includes('a secret of A'), `${route} leaks A's file`);
    }
    assert.deepEqual(await stateOfA(), before);
  });

  it("B's lists never show A's resources", async () => {
    const get = (path: string) => call(keyB, path).then((r) => ok(r));
    const ids = (items: Json[], field = 'id') => items.map((x) => x[field]);
    assert.deepEqual(ids((await get('/v1/sandboxes')).items), [sbxB]);
    assert.deepEqual((await get('/v1/snapshots')).items, []);
    assert.deepEqual((await get('/v1/volumes')).items, []);
    assert.deepEqual((await get('/v1/webhooks')).items, []);
    assert.deepEqual((await get('/v1/databases')).items, []);
    assert.deepEqual(ids((await get('/v1/keys')).items), [keyBId]);
    assert.deepEqual(ids((await get('/v1/orgs')).items), [orgB]);
    assert.ok(!ids((await get('/v1/templates')).items, 'name').includes(a.template));
    assert.deepEqual((await get(`/v1/sandboxes/${sbxB}/pty`)).items, []);
    // B's sandbox lists its own processes (the template's start leaves some), never A's.
    const procs = (await get(`/v1/sandboxes/${sbxB}/processes`)).items as Json[];
    assert.ok(!procs.some((x) => x.cmd === 'sleep'), JSON.stringify(procs));
    assert.equal((await get('/v1/quotas')).org_id, orgB);
    const audit = (await get('/v1/audit')).items as Json[];
    // B's audit log holds B's own requests only (those above name A's ids, as B sent them).
    assert.ok(audit.length > 0 && audit.every((e) => e.org_id === orgB && e.actor === keyBId));
    const usage = await get('/v1/usage');
    assert.ok(
      usage.groups.every((g: Json) => g.key === orgB),
      JSON.stringify(usage.groups),
    );
    const aIds = Object.values(a).filter((v) => typeof v === 'string' && v.length > 4);
    const everything = JSON.stringify([usage, await get('/v1/templates')]);
    for (const id of aIds) assert.ok(!everything.includes(id as string), `B's lists show ${id}`);
    // A sees its own: the lists above are filtered, not empty by accident.
    const mine = (await call(p.adminToken, '/v1/webhooks').then((r) => ok(r))).items;
    assert.ok(mine.some((w: Json) => w.id === a.webhook));
  });

  it("preview URLs and the PTY and LSP WebSockets of A's sandbox are not found with B's key", async () => {
    const host = `3000-${a.sandbox}.localhost:${new URL(p.url).port}`;
    const preview = await previewRequest(p.url, host, '/', {
      headers: { authorization: `Bearer ${keyB}` },
    });
    assert.equal(preview.status, 404);
    assert.equal(JSON.parse(preview.body.toString()).error.code, SBX);
    const wsUrl = `${p.url.replace('http', 'ws')}/v1/sandboxes/${a.sandbox}/pty/${a.pty}`;
    const refused = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${keyB}` } });
      ws.once('open', () => {
        ws.close();
        reject(new Error("B's key opened A's terminal"));
      });
      ws.once('error', () => undefined);
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
    });
    assert.equal(refused.status, 404);
    assert.equal(JSON.parse(refused.body).error.code, SBX);
    const lsp = await refusedUpgrade(
      `${p.url.replace('http', 'ws')}/v1/sandboxes/${a.sandbox}/lsp?language=python`,
      keyB,
    );
    assert.equal(lsp.status, 404);
    assert.equal(JSON.parse(lsp.body).error.code, SBX);
  });

  it("/metrics is the install admin's only: B's admin key gets 403", async () => {
    const res = await call(keyB, '/metrics');
    assert.equal(res.status, 403);
    assert.equal(((await res.json()) as Json).error.code, 'MISSING_SCOPE');
  });
});
