import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Quotas } from '@warren/sdk';
import { runCli, startTestPlatform, type TestPlatform } from '../fixture';
import { verifiedReceiver, type VerifiedReceiver } from '../webhook-receiver';
import { waitFor } from '../wait';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('quotas per organisation (real gVisor)', () => {
  let p: TestPlatform;
  let org: string;
  let key: string; // the organisation's own admin key: not the install's admin
  // quota.exceeded events, as a webhook receiver on loopback got and verified them.
  const exceeded: Array<{ quota: string; limit: number; current: number }> = [];
  let receiver: VerifiedReceiver | undefined;
  const made = new Set<string>();

  const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) =>
    p.api(path, { token: key, ...init });
  const setQuotas = async (json: Record<string, unknown>) => {
    const res = await p.api(`/v1/orgs/${org}/quotas`, { method: 'PUT', json });
    assert.equal(res.status, 200, await res.clone().text());
    return (await res.json()) as Json;
  };
  const create = async (json: Record<string, unknown> = {}) => {
    const res = await call('/v1/sandboxes', {
      method: 'POST',
      json: { template: 'base', memory_mb: 128, ...json },
    });
    const body = (await res.json()) as Json;
    if (res.status === 201) made.add(body.id);
    return { res, body };
  };
  const destroy = async (id: string) => {
    const res = await call(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    assert.ok(res.ok, await res.text());
    made.delete(id);
  };
  // The host removes a destroyed sandbox's container just after answering.
  const noContainers = () =>
    waitFor(() => p.runscContainers().length === 0, { what: 'no runsc containers' });
  const expectQuota = (r: { res: Response; body: Json }, quota: string) => {
    assert.equal(r.res.status, 429, JSON.stringify(r.body));
    assert.equal(r.body.error.code, 'QUOTA_EXCEEDED');
    assert.equal(r.body.error.details.quota, quota);
    assert.match(r.body.error.message, new RegExp(quota));
    assert.ok(Number(r.res.headers.get('retry-after')) >= 1);
  };

  before(async () => {
    p = await startTestPlatform();
    org = (await p.json('/v1/orgs', { method: 'POST', json: { name: 'q' } })).id;
    key = (
      await p.json('/v1/keys', {
        method: 'POST',
        json: { name: 'q-admin', scopes: ['admin'], org_id: org },
      })
    ).key;
    receiver = await verifiedReceiver(
      async (url) => {
        const endpoint = await call('/v1/webhooks', {
          method: 'POST',
          json: { url, events: ['quota.exceeded'] },
        });
        assert.equal(endpoint.status, 201, await endpoint.clone().text());
        return (await endpoint.json()) as { secret: string };
      },
      (event) => exceeded.push((event as Json).data),
    );
  });
  after(async () => {
    for (const id of made) await call(`/v1/sandboxes/${id}`, { method: 'DELETE' }).catch(() => 0);
    await p?.stop();
    receiver?.close();
  });

  it('only the install admin sets quotas; an organisation reads its own and its use', async () => {
    const own = await call(`/v1/orgs/${org}/quotas`, { method: 'PUT', json: { sandboxes: 1 } });
    assert.equal(own.status, 403);
    assert.equal(((await own.json()) as Json).error.code, 'MISSING_SCOPE');
    const ownGet = await call(`/v1/orgs/${org}/quotas`);
    assert.equal(ownGet.status, 200);
    const otherGet = await call('/v1/orgs/org_default/quotas');
    assert.equal(otherGet.status, 404);
    const nope = await p.api('/v1/orgs/org_nope/quotas', { method: 'PUT', json: {} });
    assert.equal(nope.status, 404);
    const set = await setQuotas({ sandboxes: 2 });
    assert.equal(set.limits.sandboxes, 2);
    assert.equal(set.limits.memory_mb, null);
    const mine = (await (await call('/v1/quotas')).json()) as Json;
    assert.equal(mine.org_id, org);
    assert.deepEqual(mine.overrides, { sandboxes: 2 });
    assert.equal(mine.usage.sandboxes, 0);
    // The SDK and the CLI.
    const viaSdk = await Quotas.get(undefined, { apiUrl: p.url, apiKey: key });
    assert.equal(viaSdk.limits.sandboxes, 2);
    const cli = await runCli(p, ['quotas', '--org', org, '--set', 'sandboxes=2', '--json']);
    assert.equal(cli.code, 0, cli.stderr);
    assert.deepEqual(JSON.parse(cli.stdout).overrides, { sandboxes: 2 });
    const table = await runCli(p, ['quotas']);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /sandboxes\s+unlimited\s+default\s+0/);
    const bad = await runCli(p, ['quotas', '--org', org, '--set', 'cpus=1']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /unknown quota cpus/);
  });

  it('six concurrent creates under a quota of two: two made, four 429, nothing leaked', async () => {
    const results = await Promise.all(Array.from({ length: 6 }, () => create()));
    const ok = results.filter((r) => r.res.status === 201);
    const refused = results.filter((r) => r.res.status !== 201);
    assert.equal(ok.length, 2, JSON.stringify(results.map((r) => r.body)));
    for (const r of refused) expectQuota(r, 'sandboxes');
    assert.equal(refused[0]!.body.error.details.limit, 2);
    const listed = (await (await call('/v1/sandboxes')).json()) as Json;
    assert.equal(listed.items.length, 2);
    assert.equal(p.runscContainers().length, 2);
    await waitFor(
      () => exceeded.some((e) => e.quota === 'sandboxes' && e.limit === 2 && e.current === 2),
      { what: 'a signed quota.exceeded webhook for the sandboxes quota' },
    );
    const use = (await (await call('/v1/quotas')).json()) as Json;
    assert.equal(use.usage.sandboxes, 2);
    assert.equal(use.usage.memory_mb, 256);
    // A memory quota counts the live ones: 256 in use, 128 more is over 300.
    await setQuotas({ sandboxes: 5, memory_mb: 300 });
    expectQuota(await create(), 'memory_mb');
    await Promise.all(ok.map((r) => destroy(r.body.id)));
    await noContainers();
  });

  it('the create bucket refuses with the seconds until a token, then recovers', async () => {
    await setQuotas({ creates_burst: 1, creates_per_second: 0.5 });
    // Sent together, so the bucket has no time to refill between them, however long a create takes.
    const pair = await Promise.all([create(), create()]);
    const first = pair.find((r) => r.res.status === 201);
    const second = pair.find((r) => r.res.status !== 201);
    assert.ok(first && second, JSON.stringify(pair.map((r) => r.body)));
    expectQuota(second, 'creates');
    const wait = Number(second.res.headers.get('retry-after'));
    assert.ok(
      wait >= 1 && wait <= 2,
      `Retry-After ${wait}: the seconds until a token (one per 2 s)`,
    );
    await new Promise((r) => setTimeout(r, wait * 1000 + 100));
    const third = await create();
    assert.equal(third.res.status, 201, JSON.stringify(third.body));
    // Snapshot storage, databases and volumes (disk) refuse before making anything.
    await setQuotas({ snapshot_bytes: 0, databases: 0, disk_mb: 10 });
    const snap = await call(`/v1/sandboxes/${first.body.id}/snapshots`, { method: 'POST' });
    expectQuota({ res: snap, body: await snap.json() }, 'snapshot_bytes');
    assert.deepEqual(((await (await call('/v1/snapshots')).json()) as Json).items, []);
    const db = await call('/v1/databases', { method: 'POST', json: { label: 'q' } });
    expectQuota({ res: db, body: await db.json() }, 'databases');
    assert.deepEqual(((await (await call('/v1/databases')).json()) as Json).items, []);
    const vol = await call('/v1/volumes', { method: 'POST', json: { name: 'big', size_mb: 16 } });
    expectQuota({ res: vol, body: await vol.json() }, 'disk_mb');
    assert.deepEqual(((await (await call('/v1/volumes')).json()) as Json).items, []);
    await Promise.all([destroy(first.body.id), destroy(third.body.id)]);
    await noContainers();
  });
});
