import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Sandbox, getUsage } from '../../src/index';
import type { SandboxList } from '@warren/protocol';
import {
  sandboxRecord,
  sendJson,
  startFakeApi,
  type DeleteResultBody,
  type FakeApi,
} from '../helpers/fake-api';

let api: FakeApi;
let opts: { apiUrl: string; apiKey: string };

before(async () => {
  api = await startFakeApi((req, res) => {
    if (req.method === 'POST' && req.path === '/v1/sandboxes') {
      return sendJson(res, 201, sandboxRecord('sbx_new'));
    }
    if (req.method === 'GET' && req.path === '/v1/sandboxes') {
      // Two pages: the client must follow the cursor.
      const second = req.query.get('cursor') === 'c2';
      return sendJson(res, 200, {
        items: [sandboxRecord(second ? 'sbx_b' : 'sbx_a')],
        next_cursor: second ? null : 'c2',
      } satisfies SandboxList);
    }
    if (req.method === 'PATCH')
      return sendJson(res, 200, sandboxRecord('sbx_new', { ttl_seconds: 60 }));
    if (req.method === 'DELETE')
      return sendJson(res, 200, { id: 'sbx_new', deleted: true } satisfies DeleteResultBody);
    sendJson(res, 200, sandboxRecord(req.path.split('/').at(-1)!));
  });
  opts = { apiUrl: api.url, apiKey: 'k' };
});
after(() => api.close());

test('create maps camelCase options to the request body', async () => {
  const sbx = await Sandbox.create('base', {
    ...opts,
    ttlSeconds: 60,
    memoryMb: 256,
    metadata: { a: 'b' },
  });
  assert.equal(sbx.id, 'sbx_new');
  assert.equal(sbx.info.state, 'running');
  assert.deepEqual(JSON.parse(api.requests.at(-1)!.body.toString()), {
    template: 'base',
    ttl_seconds: 60,
    memory_mb: 256,
    metadata: { a: 'b' },
  });

  await sbx.setTimeout(60);
  assert.deepEqual(JSON.parse(api.requests.at(-1)!.body.toString()), { ttl_seconds: 60 });
  assert.equal(sbx.info.ttl_seconds, 60);
  await sbx.kill();
  assert.equal(api.requests.at(-1)!.method, 'DELETE');
});

test('list follows cursors and filters by state and metadata', async () => {
  const items = await Sandbox.list({ ...opts, state: 'running', metadata: { team: 'x' } });
  assert.deepEqual(
    items.map((s) => s.id),
    ['sbx_a', 'sbx_b'],
  );
  const first = api.requests.at(-2)!;
  assert.equal(first.query.get('state'), 'running');
  assert.equal(first.query.get('metadata.team'), 'x');
  assert.equal(api.requests.at(-1)!.query.get('cursor'), 'c2');
});

test('connect fetches the sandbox; ids are URL-encoded', async () => {
  const sbx = await Sandbox.connect('sbx_1', opts);
  assert.equal(sbx.info.id, 'sbx_1');
  await Sandbox.connect('a/b', opts);
  assert.equal(api.requests.at(-1)!.path, '/v1/sandboxes/a%2Fb');
});

test('metrics and usage send their ranges as ISO times', async () => {
  const sbx = await Sandbox.connect('sbx_m', opts);
  await sbx.metrics({ since: new Date('2026-12-01T10:00:00Z'), until: '2026-12-01T11:00:00Z' });
  const m = api.requests.at(-1)!;
  assert.equal(m.path, '/v1/sandboxes/sbx_m/metrics');
  assert.equal(m.query.get('since'), '2026-12-01T10:00:00.000Z');
  assert.equal(m.query.get('until'), '2026-12-01T11:00:00Z');
  await getUsage({ ...opts, groupBy: 'label:team', from: new Date('2026-12-01T00:00:00Z') });
  const u = api.requests.at(-1)!;
  assert.equal(u.path, '/v1/usage');
  assert.equal(u.query.get('group_by'), 'label:team');
  assert.equal(u.query.get('from'), '2026-12-01T00:00:00.000Z');
  assert.equal(u.query.get('to'), null);
});
