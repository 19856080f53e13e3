import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Agent } from 'node:http';
import { connect } from 'node:net';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Sandbox } from '@warren/sdk';
import { createSandbox, startTestPlatform, type TestPlatform } from '../fixture';
import { PREVIEW_APP, RawWebSocket, previewRequest } from '../preview-app';
import { waitFor, waitUntil } from '../wait';

describe('preview URLs: ports in a sandbox over the control plane (real gVisor)', () => {
  let p: TestPlatform;
  let open: string;
  let guarded: string;
  let token: string;
  let apiPort: string;
  const host = (id: string, port = 3000) => `${port}-${id}.localhost:${apiPort}`;
  const get = (id: string, path: string, init: Parameters<typeof previewRequest>[3] = {}) =>
    previewRequest(p.url, host(id), path, init);
  const code = (body: Buffer) =>
    (JSON.parse(body.toString()) as { error: { code: string } }).error.code;

  async function startApp(id: string): Promise<void> {
    await p.json(`/v1/sandboxes/${id}/processes`, {
      method: 'POST',
      json: { cmd: 'python3', args: ['-c', PREVIEW_APP, '3000'] },
    });
    await waitFor(
      async () => {
        const res = await get(id, '/hello', {
          headers: token ? { 'x-warren-preview-token': token } : {},
        });
        if (res.status === 200) return true;
        // Anything but "not listening yet" is a failure at once, not a reason to wait.
        assert.equal(code(res.body), 'PORT_NOT_LISTENING');
        return false;
      },
      { what: `the app in ${id} to listen on port 3000`, timeoutMs: 20_000, intervalMs: 100 },
    );
  }

  before(async () => {
    p = await startTestPlatform();
    apiPort = new URL(p.url).port;
    open = await createSandbox(p, { template: 'base', memory_mb: 256 });
    const created = await p.json<{ id: string; preview_token: string; preview_auth: boolean }>(
      '/v1/sandboxes',
      { method: 'POST', json: { template: 'base', memory_mb: 256, preview_auth: true } },
    );
    guarded = created.id;
    assert.equal(created.preview_auth, true);
    assert.match(created.preview_token, /^wpt_[a-z0-9]{40}$/);
    await startApp(open);
    token = created.preview_token;
    await startApp(guarded);
  });
  after(async () => {
    await p?.stop();
  });

  it('serves a port of the sandbox at {port}-{id}.localhost, without an API token', async () => {
    const res = await get(open, '/hello');
    assert.equal(res.status, 200);
    assert.equal(res.body.toString(), 'hello from the sandbox\n');

    const seen = JSON.parse((await get(open, '/headers?a=1%202')).body.toString()) as {
      path: string;
      headers: Record<string, string>;
    };
    assert.equal(seen.path, '/headers?a=1%202', 'the path goes on as sent');
    assert.equal(seen.headers.host, host(open), 'the Host header is kept');
    assert.equal(seen.headers['x-forwarded-for'], '127.0.0.1');

    // The id without its sbx_ prefix, for DNS names and certificates that refuse underscores.
    const short = await previewRequest(p.url, host(open).replace('sbx_', ''), '/hello');
    assert.equal(short.status, 200);

    // The API itself still needs its token.
    assert.equal((await p.api(`/v1/sandboxes/${open}`, { token: null })).status, 401);

    const view = await p.json<{ preview_url: string; preview_auth: boolean }>(
      `/v1/sandboxes/${open}`,
    );
    assert.equal(view.preview_url, `http://{port}-${open}.localhost:${apiPort}`);
    assert.equal(view.preview_auth, false);
  });

  it('the SDK gives preview URLs and preview tokens', async () => {
    const conn = { apiUrl: p.url, apiKey: p.adminToken };
    const sdk = await Sandbox.connect(open, conn);
    const url = new URL(sdk.getPreviewUrl(3000));
    assert.equal(url.host, host(open));
    assert.equal((await previewRequest(p.url, url.host, '/hello')).status, 200);
    const guardedSdk = await Sandbox.connect(guarded, conn);
    assert.equal(guardedSdk.previewToken, undefined, 'not shown after create');
    token = await guardedSdk.rotatePreviewToken();
    assert.equal(guardedSdk.previewToken, token);
    const res = await get(guarded, '/hello', { headers: { 'x-warren-preview-token': token } });
    assert.equal(res.status, 200);
  });

  it('keeps connections alive, carries request bodies both ways', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (let i = 0; i < 20; i++) assert.equal((await get(open, '/hello', { agent })).status, 200);
      const body = Buffer.alloc(3 * 1024 * 1024, 'z');
      const echoed = await get(open, '/echo', { method: 'POST', body, agent });
      assert.equal(echoed.status, 200);
      assert.ok(echoed.body.equals(body));
      const big = await get(open, '/bytes?n=20000000', { agent });
      assert.equal(big.body.length, 20_000_000);
    } finally {
      agent.destroy();
    }
  });

  it('streams a response as it is produced', async () => {
    const url = new URL(p.url);
    const arrivals: number[] = [];
    const started = Date.now();
    await new Promise<void>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname);
      socket.write(`GET /stream HTTP/1.1\r\nhost: ${host(open)}\r\nconnection: close\r\n\r\n`);
      socket.on('data', (d: Buffer) => {
        if (d.toString().includes('tick')) arrivals.push(Date.now() - started);
      });
      socket.on('end', resolve);
      socket.on('error', reject);
    });
    assert.ok(arrivals.length >= 3, `chunks arrived in ${arrivals.length} pieces`);
    assert.ok(arrivals[arrivals.length - 1]! - arrivals[0]! >= 900, `arrivals: ${arrivals}`);
  });

  it('passes WebSocket upgrades through', async () => {
    const { ws, head } = await RawWebSocket.open(p.url, host(open), '/ws');
    try {
      assert.match(head, /^HTTP\/1\.1 101 /);
      for (const msg of ['one', 'two', 'three']) {
        ws.send(msg);
        assert.equal(await ws.receive(), `echo: ${msg}`);
      }
    } finally {
      ws.close();
    }
  });

  it('fails fast with stable codes: port not listening, unknown sandbox, bad port, stopped sandbox', async () => {
    const t = Date.now();
    const closed = await previewRequest(p.url, host(open, 3001), '/');
    assert.equal(closed.status, 502);
    assert.equal(code(closed.body), 'PORT_NOT_LISTENING');
    assert.ok(Date.now() - t < 5000);

    const unknown = await previewRequest(p.url, host('sbx_0000000000000000'), '/');
    assert.equal(unknown.status, 404);
    assert.equal(code(unknown.body), 'SANDBOX_NOT_FOUND');

    const bad = await previewRequest(p.url, host(open, 70000), '/');
    assert.equal(bad.status, 400);
    assert.equal(code(bad.body), 'INVALID_REQUEST');

    const { ws, head } = await RawWebSocket.open(p.url, host(open, 3001), '/ws');
    ws.close();
    assert.match(head, /^HTTP\/1\.1 502 /);

    const gone = await createSandbox(p, { template: 'base', memory_mb: 128 });
    await p.json(`/v1/sandboxes/${gone}`, { method: 'DELETE' });
    const stopped = await previewRequest(p.url, host(gone), '/');
    assert.equal(stopped.status, 409);
    assert.equal(code(stopped.body), 'SANDBOX_NOT_RUNNING');
  });

  it('preview_auth: a token in a header, or in the query once (then a cookie); rotation', async () => {
    const none = await get(guarded, '/hello');
    assert.equal(none.status, 401);
    assert.equal(code(none.body), 'PREVIEW_AUTH_REQUIRED');
    const wrong = await get(guarded, '/hello', { headers: { 'x-warren-preview-token': 'wpt_x' } });
    assert.equal(wrong.status, 401);
    const ws401 = await RawWebSocket.open(p.url, host(guarded), '/ws');
    ws401.ws.close();
    assert.match(ws401.head, /^HTTP\/1\.1 401 /);

    const withHeader = await get(guarded, '/headers', {
      headers: { 'x-warren-preview-token': token, cookie: 'app=1' },
    });
    assert.equal(withHeader.status, 200);
    const seen = JSON.parse(withHeader.body.toString()) as { headers: Record<string, string> };
    assert.equal(seen.headers['x-warren-preview-token'], undefined, 'the token stays outside');
    assert.equal(seen.headers.cookie, 'app=1');

    const viaQuery = await get(guarded, `/headers?x=1&warren_preview_token=${token}`);
    assert.equal(viaQuery.status, 302);
    assert.equal(viaQuery.headers.location, '/headers?x=1');
    const setCookie = String(viaQuery.headers['set-cookie']);
    assert.match(setCookie, new RegExp(`^warren_preview_token=${token}; Path=/; HttpOnly`));
    const cookie = `app=2; ${setCookie.split(';')[0]}`;
    const withCookie = await get(guarded, '/headers?x=1', { headers: { cookie } });
    assert.equal(withCookie.status, 200);
    const seen2 = JSON.parse(withCookie.body.toString()) as { headers: Record<string, string> };
    assert.equal(seen2.headers.cookie, 'app=2', 'the token cookie is taken out');

    const ws = await RawWebSocket.open(p.url, host(guarded), '/ws', { cookie });
    try {
      assert.match(ws.head, /^HTTP\/1\.1 101 /);
      ws.ws.send('hi');
      assert.equal(await ws.ws.receive(), 'echo: hi');
    } finally {
      ws.ws.close();
    }

    const rotated = await p.json<{ preview_token: string; preview_url: string }>(
      `/v1/sandboxes/${guarded}/preview-token`,
      { method: 'POST' },
    );
    assert.notEqual(rotated.preview_token, token);
    assert.equal(rotated.preview_url, `http://{port}-${guarded}.localhost:${apiPort}`);
    assert.equal((await get(guarded, '/hello', { headers: { cookie } })).status, 401);
    token = rotated.preview_token;
    const fresh = await get(guarded, '/hello', { headers: { 'x-warren-preview-token': token } });
    assert.equal(fresh.status, 200);

    const view = await p.json<Record<string, unknown>>(`/v1/sandboxes/${guarded}`);
    assert.equal(view.preview_auth, true);
    assert.equal(view.preview_token, undefined, 'the token is shown only at create and rotation');
    const refused = await p.api(`/v1/sandboxes/${open}/preview-token`, { method: 'POST' });
    assert.equal(refused.status, 409);
  });

  it('a preview request counts as activity for the TTL', async () => {
    const before = await p.json<{ last_activity_at: string }>(`/v1/sandboxes/${open}`);
    // The proxy counts a request as activity once a second at most (TOUCH_INTERVAL_MS).
    await waitUntil(
      Date.parse(before.last_activity_at) + 1100,
      'a second to pass since the last activity',
    );
    assert.equal((await get(open, '/hello')).status, 200);
    const after = await p.json<{ last_activity_at: string }>(`/v1/sandboxes/${open}`);
    assert.ok(after.last_activity_at > before.last_activity_at);
  });

  it('hibernate closes open preview connections; a preview request wakes the sandbox', async () => {
    const { ws, head } = await RawWebSocket.open(p.url, host(open), '/ws');
    assert.match(head, /^HTTP\/1\.1 101 /);
    const agent = new Agent({ keepAlive: true });
    try {
      assert.equal((await get(open, '/hello', { agent })).status, 200); // a pooled connection too
      const hib = await p.json<{ state: string }>(`/v1/sandboxes/${open}/hibernate`, {
        method: 'POST',
      });
      assert.equal(hib.state, 'hibernated');
      await waitFor(() => ws.closed, {
        what: 'the WebSocket to be closed for the checkpoint',
        timeoutMs: 5_000,
      });

      const woken = await get(open, '/hello', { agent });
      assert.equal(woken.status, 200);
      assert.equal(woken.body.toString(), 'hello from the sandbox\n');
      const view = await p.json<{ state: string }>(`/v1/sandboxes/${open}`);
      assert.equal(view.state, 'running');
      const events = await p.json<{ items: Array<{ cause: string }> }>(
        `/v1/sandboxes/${open}/events`,
      );
      assert.ok(events.items.some((e) => e.cause === 'wake (implicit, on use)'));
    } finally {
      ws.close();
      agent.destroy();
    }
  });

  it('leaves nothing behind', async () => {
    for (const id of [open, guarded]) await p.json(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    await p.host.settle();
    assert.deepEqual(p.runscContainers(), []);
    assert.deepEqual(readdirSync(join(p.home, 'sandboxes')), []);
  });
});
