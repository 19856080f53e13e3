import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createSandbox, exec, startTestPlatform, type TestPlatform } from '../fixture';
import { waitFor } from '../wait';

type ErrorBody = { error: { code: string; message: string; request_id: string } };

describe('auth, bad input, admission, TTL, OpenAPI, audit (real gVisor)', () => {
  let p: TestPlatform;
  before(async () => {
    // Room for exactly one default (512 MiB) sandbox; TTLs are swept twice a second.
    // No overcommit: a second 512 MiB sandbox does not fit 800 MiB of memory_mb.
    p = await startTestPlatform({ memoryBudgetMb: 800, memoryOvercommit: 1, sweepIntervalMs: 500 });
  });
  after(async () => {
    await p?.stop();
  });

  it('health needs no token; everything else does, with a stable code', async () => {
    const health = await p.api('/v1/health', { token: null });
    assert.equal(health.status, 200);
    const h = (await health.json()) as {
      status: string;
      runtime: { driver: string; volume_clone: string };
    };
    assert.equal(h.status, 'ok');
    assert.equal(h.runtime.driver, 'gvisor');
    // This host's ext4 gets the XFS volume pool: copies of volumes share blocks.
    assert.equal(h.runtime.volume_clone, 'reflink');
    for (const token of [null, 'wrn_wrong', '']) {
      const res = await p.api('/v1/sandboxes', { token });
      assert.equal(res.status, 401);
      const body = (await res.json()) as ErrorBody;
      assert.equal(body.error.code, 'UNAUTHORIZED');
      assert.match(body.error.request_id, /^req_/);
      assert.equal(res.headers.get('x-request-id'), body.error.request_id);
    }
    assert.match(p.adminToken, /^wrn_[0-9a-z]{40}$/);
  });

  it('bad input gets typed errors and leaves nothing behind', async () => {
    const cases: Array<[string, RequestInit & { json?: unknown }, number, string]> = [
      [
        '/v1/sandboxes',
        { method: 'POST', body: '{"template":', headers: { 'content-type': 'application/json' } },
        400,
        'INVALID_JSON',
      ],
      [
        '/v1/sandboxes',
        { method: 'POST', json: { template: 'base', surprise: true } },
        400,
        'INVALID_REQUEST',
      ],
      [
        '/v1/sandboxes',
        { method: 'POST', json: { template: 'no-such-template' } },
        404,
        'TEMPLATE_NOT_FOUND',
      ],
      [
        '/v1/sandboxes',
        { method: 'POST', json: { template: 'base', ttl_seconds: -5 } },
        400,
        'INVALID_REQUEST',
      ],
      [
        '/v1/sandboxes',
        {
          method: 'POST',
          body: 'template=base',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        },
        415,
        'UNSUPPORTED_MEDIA_TYPE',
      ],
      ['/v1/sandboxes/sbx_doesnotexist00', { method: 'GET' }, 404, 'SANDBOX_NOT_FOUND'],
      [
        '/v1/sandboxes/sbx_doesnotexist00/exec',
        { method: 'POST', json: { cmd: 'true' } },
        404,
        'SANDBOX_NOT_FOUND',
      ],
      ['/v1/sandboxes/sbx_doesnotexist00', { method: 'DELETE' }, 404, 'SANDBOX_NOT_FOUND'],
      ['/v1/nothing-here', { method: 'GET' }, 404, 'NOT_FOUND'],
    ];
    for (const [path, init, status, code] of cases) {
      const res = await p.api(path, init);
      const text = await res.text();
      assert.equal(res.status, status, `${path} ${text}`);
      const body = JSON.parse(text) as ErrorBody;
      assert.equal(body.error.code, code, text);
      assert.ok(!/\n\s+at /.test(text), 'no stack trace');
    }
    const listed = await p.json('/v1/sandboxes?state=creating');
    assert.equal(listed.items.length, 0);
    assert.deepEqual(readdirSync(join(p.home, 'sandboxes')), []);
    assert.deepEqual(p.runscContainers(), []);
  });

  it('refuses a create that does not fit the memory budget, at once and cleanly', async () => {
    const first = await createSandbox(p);
    try {
      const started = Date.now();
      const res = await p.api('/v1/sandboxes', { method: 'POST', json: { template: 'base' } });
      assert.equal(res.status, 503);
      assert.equal(((await res.json()) as ErrorBody).error.code, 'INSUFFICIENT_CAPACITY');
      assert.ok(Date.now() - started < 1000, 'refused without trying');
      assert.deepEqual(p.runscContainers(), [first]);
      assert.deepEqual(readdirSync(join(p.home, 'sandboxes')), [first]);
      const health = await p.json('/v1/health');
      assert.equal(health.hosts[0].memory_reserved_mb, 512);
      // A smaller one still fits.
      const small = await createSandbox(p, { template: 'base', memory_mb: 256 });
      await p.json(`/v1/sandboxes/${small}`, { method: 'DELETE' });
    } finally {
      await p.api(`/v1/sandboxes/${first}`, { method: 'DELETE' });
    }
    const again = await createSandbox(p);
    await p.json(`/v1/sandboxes/${again}`, { method: 'DELETE' });
  });

  it('reaps a sandbox whose TTL passed without activity; activity refreshes the TTL', async () => {
    const idle = await createSandbox(p, { template: 'base', ttl_seconds: 2, memory_mb: 128 });
    // The busy one has a longer TTL so a slow sweep on a loaded machine cannot outlast
    // it; it is used until well past its first deadline, which proves the refresh.
    const busy = await createSandbox(p, { template: 'base', ttl_seconds: 5, memory_mb: 128 });
    try {
      const idleExpiry = Date.parse((await p.json(`/v1/sandboxes/${idle}`)).expires_at);
      const busyExpiry = Date.parse((await p.json(`/v1/sandboxes/${busy}`)).expires_at);
      // Each exec is activity: the busy one is used every ~0.5 s (the time is spent in the
      // sandbox) until both first deadlines have passed.
      await waitFor(
        async () => {
          await exec(p, busy, { cmd: 'sleep', args: ['0.5'] });
          return Date.now() > Math.max(idleExpiry, busyExpiry + 500);
        },
        { what: 'both first deadlines to pass', timeoutMs: 30_000, intervalMs: 0 },
      );
      // More than the TTL for the idle one, never for the busy one. The second sweep
      // surely starts after the wait (the first may join one already under way).
      await p.sweeper.sweep();
      await p.sweeper.sweep();
      const gone = await p.json(`/v1/sandboxes/${idle}`);
      assert.deepEqual([gone.state, gone.stop_reason], ['stopped', 'ttl_expired']);
      const alive = await p.json(`/v1/sandboxes/${busy}`);
      assert.equal(alive.state, 'running');
      assert.ok(Date.parse(alive.expires_at) > Date.now());
      await p.host.settle();
      assert.ok(!p.runscContainers().includes(idle));
    } finally {
      await p.api(`/v1/sandboxes/${busy}`, { method: 'DELETE' });
    }
  });

  it('serves the OpenAPI document generated from the schemas', async () => {
    const doc = await p.json('/v1/openapi.json');
    assert.equal(doc.openapi, '3.0.3');
    for (const path of [
      '/v1/sandboxes',
      '/v1/sandboxes/{id}',
      '/v1/sandboxes/{id}/exec',
      '/v1/sandboxes/{id}/exec/stream',
      '/v1/sandboxes/{id}/files',
      '/v1/health',
    ]) {
      assert.ok(doc.paths[path], `documents ${path}`);
    }
    const create = doc.paths['/v1/sandboxes'].post;
    assert.ok(create.requestBody.content['application/json'].schema.properties.ttl_seconds);
    assert.equal((await p.api('/v1/openapi.json', { token: null })).status, 401);
  });

  it('records an audit event for every state-changing request', async () => {
    const id = await createSandbox(p, { template: 'base', memory_mb: 128 });
    await exec(p, id, { cmd: 'true' });
    await p.json(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    await p.api('/v1/sandboxes', { method: 'POST', token: 'wrn_bad', json: {} });
    const audit = await p.json('/v1/audit?limit=50');
    const mine = audit.items
      .filter((e: { resource_id: string }) => e.resource_id === id)
      .map((e: { action: string; status: number }) => `${e.action} ${e.status}`);
    assert.deepEqual(mine.reverse(), [
      'POST /v1/sandboxes 201',
      'POST /v1/sandboxes/:id/exec 200',
      'DELETE /v1/sandboxes/:id 200',
    ]);
    const failures = audit.items.filter(
      (e: { error_code: string | null }) => e.error_code === 'TEMPLATE_NOT_FOUND',
    );
    assert.ok(failures.length >= 1, 'failed requests are audited with their code');

    // Filters: by resource, action prefix, result and request id; paging by `before`.
    const byResource = await p.json(`/v1/audit?resource_id=${id}&limit=2`);
    assert.deepEqual(
      byResource.items.map((e: { action: string }) => e.action),
      ['DELETE /v1/sandboxes/:id', 'POST /v1/sandboxes/:id/exec'],
    );
    assert.equal(byResource.next_before, byResource.items[1].id);
    const rest = await p.json(`/v1/audit?resource_id=${id}&before=${byResource.next_before}`);
    assert.deepEqual(
      rest.items.map((e: { action: string }) => e.action),
      ['POST /v1/sandboxes'],
    );
    assert.equal(rest.next_before, null);
    const deletes = await p.json(`/v1/audit?action=${encodeURIComponent('DELETE /v1/sandboxes*')}`);
    assert.ok(deletes.items.length >= 1);
    assert.ok(
      deletes.items.every((e: { action: string }) => e.action.startsWith('DELETE /v1/sandboxes')),
    );
    const failed = await p.json('/v1/audit?result=failure&error_code=TEMPLATE_NOT_FOUND');
    assert.ok(
      failed.items.length >= 1 && failed.items.every((e: { status: number }) => e.status >= 400),
    );
    const one = byResource.items[0];
    const byRequest = await p.json(`/v1/audit?request_id=${one.request_id}`);
    assert.deepEqual(byRequest.items, [one]);
    const byActor = await p.json(`/v1/audit?actor=${one.actor}&resource_id=${id}`);
    assert.equal(byActor.items.length, 3);
    const future = await p.json(`/v1/audit?since=${new Date(Date.now() + 60_000).toISOString()}`);
    assert.deepEqual(future.items, []);
    const bad = await p.api('/v1/audit?result=maybe');
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as ErrorBody).error.code, 'INVALID_REQUEST');
    // The log cannot be edited through the API.
    assert.equal((await p.api(`/v1/audit`, { method: 'DELETE' })).status, 404);
  });
});
