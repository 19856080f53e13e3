/**
 * Webhooks end to end: a real platform, one real sandbox, and a receiver on
 * loopback that verifies every delivery as a receiver would, with the
 * standardwebhooks package. The retry schedule is scaled down (1/10000) and
 * endpoints are disabled after 1 s of failures, so retries take milliseconds.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { WarrenError, Webhooks } from '@warren/sdk';
import { startTestPlatform, type TestPlatform } from '../fixture';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Got {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** Answers each path with a status chosen by the test (by the request's number on that path), or holds it. */
class Receiver {
  readonly got: Got[] = [];
  readonly answer = new Map<string, (n: number) => number | 'hold'>();
  private readonly held: ServerResponse[] = [];
  private readonly server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const n = this.got.filter((g) => g.path === path).length + 1;
      this.got.push({ path, headers: flat(req.headers), body: Buffer.concat(chunks).toString() });
      const status = this.answer.get(path)?.(n) ?? 200;
      if (status === 'hold') return void this.held.push(res);
      res.writeHead(status, { 'content-type': 'text/plain' }).end(`answer ${n} of ${path}`);
    });
  });

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
  }
  url(path: string): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }
  on(path: string): Got[] {
    return this.got.filter((g) => g.path === path);
  }
  async close(): Promise<void> {
    for (const res of this.held) res.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

function flat(h: IncomingHttpHeaders): Record<string, string> {
  return Object.fromEntries(Object.entries(h).map(([k, v]) => [k, String(v)]));
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined> | T | undefined) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('webhooks (real gVisor)', () => {
  const rx = new Receiver();
  const home = mkdtempSync('/tmp/wt-');
  const options = { webhookRetryScale: 0.0001, webhookDisableAfterSeconds: 1 };
  let p: TestPlatform;
  let key: { id: string; key: string };
  let sbx: string;
  const secrets = new Map<string, string>();
  const ids = new Map<string, string>();

  const call = async (path: string, init: { method?: string; json?: unknown } = {}) =>
    p.api(path, { ...init, token: key.key });
  const ok = async (res: Response, status = 200): Promise<Json> => {
    const body = await res.text();
    assert.equal(res.status, status, body);
    return body ? JSON.parse(body) : null;
  };
  /** Adds an endpoint receiving at `path`. */
  const endpoint = async (name: string, events?: string[]) => {
    const ep = await ok(
      await call('/v1/webhooks', { method: 'POST', json: { url: rx.url(`/${name}`), events } }),
      201,
    );
    secrets.set(name, ep.secret);
    ids.set(name, ep.id);
    return ep;
  };
  /** The payloads delivered at a path, each verified with the endpoint's secret. */
  const verified = (name: string, secret = secrets.get(name)!) =>
    rx.on(`/${name}`).map((g) => new Webhook(secret).verify(g.body, g.headers) as Json);
  const deliveries = async (name: string): Promise<Json[]> =>
    (await ok(await call(`/v1/webhooks/${ids.get(name)}/deliveries`))).items;
  const lifecycle = (action: string) =>
    call(`/v1/sandboxes/${sbx}/${action}`, { method: 'POST' }).then((r) => ok(r));

  before(async () => {
    await rx.start();
    p = await startTestPlatform({ home, keepHome: true, ...options });
    key = await p.json('/v1/keys', {
      method: 'POST',
      json: {
        name: 'hooks',
        scopes: ['sandboxes:read', 'sandboxes:write', 'snapshots', 'webhooks'],
      },
    });
  });

  after(async () => {
    try {
      await p?.stop();
    } finally {
      await rx.close();
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('delivers sandbox.created and state changes signed, with their cause; filters choose', async () => {
    const all = await endpoint('all');
    assert.match(all.secret, /^whsec_[A-Za-z0-9+/=]+$/);
    assert.deepEqual([all.events, all.enabled], [['*'], true]);
    assert.equal((await ok(await call(`/v1/webhooks/${all.id}`))).secret, undefined);
    await endpoint('states', ['sandbox.state_changed']);
    await endpoint('dbs', ['database.*']);
    // Bad input is refused with a typed error and leaves nothing behind.
    for (const [json, code] of [
      [{ url: 'ftp://127.0.0.1/x' }, 'INVALID_WEBHOOK_URL'],
      [{ url: 'not a url' }, 'INVALID_WEBHOOK_URL'],
      [{ url: rx.url('/x'), events: ['sandbox.nope'] }, 'INVALID_EVENT_FILTER'],
    ] as const) {
      const body = await ok(await call('/v1/webhooks', { method: 'POST', json }), 400);
      assert.equal(body.error.code, code);
    }
    assert.equal((await ok(await call('/v1/webhooks'))).items.length, 3);

    sbx = (
      await ok(
        await call('/v1/sandboxes', { method: 'POST', json: { template: 'base', memory_mb: 128 } }),
        201,
      )
    ).id;
    await lifecycle('pause');
    await lifecycle('resume');
    const events = await waitFor('four events', () => {
      const v = verified('all');
      return v.length >= 4 ? v : undefined;
    });
    assert.deepEqual(
      events.map((e) => [e.type, e.data.state]),
      [
        ['sandbox.created', undefined],
        ['sandbox.state_changed', 'running'],
        ['sandbox.state_changed', 'paused'],
        ['sandbox.state_changed', 'running'],
      ],
    );
    for (const e of events) {
      assert.equal(e.data.sandbox.id, sbx);
      assert.deepEqual([e.data.cause.kind, e.data.cause.key_id], ['api', key.id]);
      assert.ok(Date.parse(e.timestamp) > 0);
    }
    assert.equal(events[2].data.cause.detail, 'pause (requested)');
    const snap = await ok(await call(`/v1/sandboxes/${sbx}/snapshots`, { method: 'POST' }), 201);
    const snapEvent = await waitFor('snapshot.created', () => verified('all')[4]);
    assert.deepEqual(
      [snapEvent.type, snapEvent.data.snapshot.id, snapEvent.data.cause.key_id],
      ['snapshot.created', snap.id, key.id],
    );
    await ok(await call(`/v1/snapshots/${snap.id}`, { method: 'DELETE' }), 204);
    const states = await waitFor('three state changes', () => {
      const v = verified('states');
      return v.length >= 3 ? v : undefined;
    });
    assert.deepEqual(
      states.map((e) => e.data.state),
      ['running', 'paused', 'running'],
      'state changes only: no sandbox.created, no snapshot.created',
    );
    assert.equal(rx.on('/dbs').length, 0, 'database.* gets no sandbox events');
    // The same message has the same webhook-id on every endpoint.
    assert.equal(
      rx.on('/all')[1]!.headers['webhook-id'],
      rx.on('/states')[0]!.headers['webhook-id'],
    );
    const log = await deliveries('all');
    assert.equal(log.length, 5);
    assert.ok(log.every((d) => d.attempt === 1 && d.status_code === 200 && d.delivered));
    assert.match(log[0].response, /^answer 5 of \/all$/);
    assert.ok(log.every((d) => typeof d.latency_ms === 'number' && d.error === null));
  });

  it('retries a failing receiver until it answers 2xx, and logs every attempt', async () => {
    rx.answer.set('/flaky', (n) => (n <= 3 ? 500 : 204));
    await endpoint('flaky', ['sandbox.state_changed']);
    await lifecycle('pause');
    const log = await waitFor('delivery after three failures', async () => {
      const items = await deliveries('flaky');
      return items.some((d) => d.delivered) ? items : undefined;
    });
    assert.deepEqual(log.map((d) => [d.attempt, d.status_code, d.delivered]).reverse(), [
      [1, 500, false],
      [2, 500, false],
      [3, 500, false],
      [4, 204, true],
    ]);
    assert.equal(log[3].error, 'HTTP 500');
    assert.equal(new Set(log.map((d) => d.message_id)).size, 1);
    assert.equal(new Set(rx.on('/flaky').map((g) => g.headers['webhook-id'])).size, 1);
    assert.equal(verified('flaky').length, 4);
    assert.equal((await ok(await call(`/v1/webhooks/${ids.get('flaky')}`))).failing_since, null);
    // The delivery, retries included, is in the platform's metrics.
    const metrics = await (await p.api('/metrics')).text();
    const delivered = /^warren_webhook_deliveries_total\{result="delivered"\} (\d+)$/m.exec(
      metrics,
    );
    assert.ok(Number(delivered?.[1]) >= 1, 'warren_webhook_deliveries_total counts it');
  });

  it('disables an endpoint that keeps failing, says why; re-enabled, a redelivery arrives', async () => {
    let down = true;
    rx.answer.set('/down', () => (down ? 503 : 200));
    await endpoint('down', ['sandbox.state_changed']);
    await lifecycle('hibernate');
    const ep = await waitFor('the endpoint disabled', async () => {
      const e = await ok(await call(`/v1/webhooks/${ids.get('down')}`));
      return e.enabled ? undefined : e;
    });
    assert.match(ep.disabled_reason, /every delivery attempt failed since .* \(last: HTTP 503\)/);
    assert.ok(ep.disabled_at);
    const [last] = await deliveries('down');
    const redeliver = `/v1/webhooks/${ids.get('down')}/deliveries/${last.message_id}/redeliver`;
    const refused = await ok(await call(redeliver, { method: 'POST' }), 409);
    assert.equal(refused.error.code, 'WEBHOOK_DISABLED');
    const missing = `/v1/webhooks/${ids.get('down')}/deliveries/msg_0000000000000000/redeliver`;
    assert.equal(
      (await ok(await call(missing, { method: 'POST' }), 404)).error.code,
      'WEBHOOK_MESSAGE_NOT_FOUND',
    );

    down = false;
    const enabled = await ok(
      await call(`/v1/webhooks/${ids.get('down')}`, { method: 'PATCH', json: { enabled: true } }),
    );
    assert.deepEqual([enabled.enabled, enabled.disabled_reason], [true, null]);
    const queued = await ok(await call(redeliver, { method: 'POST' }), 202);
    assert.deepEqual(queued, {
      endpoint_id: ids.get('down'),
      message_id: last.message_id,
      state: 'pending',
    });
    const log = await waitFor('the redelivery', async () => {
      const items = await deliveries('down');
      return items[0]?.delivered ? items : undefined;
    });
    assert.deepEqual(
      [log[0].message_id, log[0].attempt, log[0].status_code],
      [last.message_id, 1, 200],
    );
    const got = rx.on('/down');
    assert.equal(got.at(-1)!.headers['webhook-id'], last.message_id);
    assert.equal(verified('down').at(-1).data.state, 'hibernated');
  });

  it('signs with both secrets during the grace period after a rotation', async () => {
    const old = secrets.get('all')!;
    const rotated = await Webhooks.rotateSecret(ids.get('all')!, {
      apiUrl: p.url,
      apiKey: key.key,
    });
    assert.notEqual(rotated.secret, old);
    const grace = Date.parse(rotated.previous_secret_expires_at!) - Date.now();
    assert.ok(grace > 23 * 3600_000 && grace <= 24 * 3600_000, `grace ${grace} ms`);
    const before = rx.on('/all').length;
    await lifecycle('wake');
    const got = await waitFor('a delivery after rotation', () => rx.on('/all')[before]);
    const signatures = got.headers['webhook-signature']!.split(' ');
    assert.equal(signatures.length, 2);
    assert.ok(signatures.every((s) => s.startsWith('v1,')));
    for (const secret of [rotated.secret, old])
      assert.equal((new Webhook(secret).verify(got.body, got.headers) as Json).data.state, 'woken');
    assert.throws(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(got.body, got.headers),
    );
  });

  it('hides endpoints from other organisations (404) and from keys without the scope', async () => {
    const org = await p.json('/v1/orgs', { method: 'POST', json: { name: 'other' } });
    const other = await p.json('/v1/keys', {
      method: 'POST',
      json: { name: 'other', scopes: ['admin'], org_id: org.id },
    });
    const id = ids.get('all')!;
    const as = (path: string, init: { method?: string; json?: unknown } = {}) =>
      p.api(path, { ...init, token: other.key });
    assert.deepEqual((await ok(await as('/v1/webhooks'))).items, []);
    for (const [method, path, json] of [
      ['GET', `/v1/webhooks/${id}`],
      ['PATCH', `/v1/webhooks/${id}`, { description: 'mine' }],
      ['DELETE', `/v1/webhooks/${id}`],
      ['POST', `/v1/webhooks/${id}/rotate-secret`],
      ['GET', `/v1/webhooks/${id}/deliveries`],
      ['POST', `/v1/webhooks/${id}/deliveries/msg_0000000000000000/redeliver`],
    ] as const) {
      const body = await ok(await as(path, { method, json }), 404);
      assert.equal(body.error.code, 'WEBHOOK_NOT_FOUND', `${method} ${path}`);
    }
    const narrow = await p.json('/v1/keys', {
      method: 'POST',
      json: { name: 'narrow', scopes: ['sandboxes:read'] },
    });
    const denied = await ok(await p.api('/v1/webhooks', { token: narrow.key }), 403);
    assert.equal(denied.error.code, 'MISSING_SCOPE');
    assert.equal((await ok(await call(`/v1/webhooks/${id}`))).description, '');
    // The SDK: the same 404 as a typed error, and a delete.
    const mine = { apiUrl: p.url, apiKey: key.key };
    await assert.rejects(
      Webhooks.get(id, { apiUrl: p.url, apiKey: other.key }),
      (e) => e instanceof WarrenError && e.code === 'WEBHOOK_NOT_FOUND',
    );
    const count = (await Webhooks.list(mine)).length;
    await Webhooks.delete(ids.get('dbs')!, mine);
    assert.equal((await Webhooks.list(mine)).length, count - 1);
  });

  it('delivers after a platform restart what was in flight when it stopped', async () => {
    let holding = true;
    rx.answer.set('/held', () => (holding ? 'hold' : 200));
    await endpoint('held', ['sandbox.state_changed']);
    await lifecycle('pause');
    const first = await waitFor('the held delivery', () => rx.on('/held')[0]);
    await p.stop();
    holding = false;
    p = await startTestPlatform({ home, ...options });
    const again = await waitFor('the delivery after restart', () => rx.on('/held')[1]);
    assert.equal(again.headers['webhook-id'], first.headers['webhook-id']);
    assert.equal(verified('held')[1].data.state, 'paused');
    const log = await waitFor('the logged delivery', async () => {
      const items = await deliveries('held');
      return items.find((d) => d.message_id === first.headers['webhook-id'] && d.delivered);
    });
    // The attempt cut short by the shutdown does not count.
    assert.deepEqual([log.attempt, log.status_code], [1, 200]);
  });
});
