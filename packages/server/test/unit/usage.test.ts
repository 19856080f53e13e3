/**
 * Usage logic: integrating host counters into per-interval usage (GB-seconds,
 * counters started again by a wake), grouping totals; and, on the FAKE
 * driver, the sampler, the usage API and organisation scoping end to end, on
 * both stores.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { waitFor } from '../../../../test/wait';
import { GIB, counterDelta, increment, type Reading } from '../../src/usage/integrate';
import { groupUsage, parseGroupBy, type SandboxUsage } from '../../src/usage/group';
import { start, useFakeTemplates, type Fx, type Json } from './fake-platform';
import { storeOptions, STORE_KINDS, useTestStores } from './stores';

useTestStores();

const T0 = Date.parse('2026-12-01T10:00:00Z');
const reading = (over: Partial<Reading>): Reading => ({
  at: T0,
  startedAt: T0,
  cpuSeconds: 0,
  memoryBytes: 0,
  diskBytes: null,
  rxBytes: 0,
  txBytes: 0,
  ...over,
});

describe('usage integration', () => {
  it('counts the first sample from the start, then integrates memory between samples', () => {
    const first = increment(
      null,
      reading({ at: T0 + 10_000, cpuSeconds: 2, memoryBytes: GIB, rxBytes: 100 }),
    );
    assert.equal(first.inc.intervalSeconds, 10);
    assert.equal(first.inc.cpuSeconds, 2);
    assert.equal(first.inc.memoryGbSeconds, 10);
    assert.equal(first.inc.rxBytes, 100);
    // 1 GiB to 3 GiB over 5 s: a mean of 2 GiB, 10 GiB-seconds.
    const second = increment(
      first.state,
      reading({ at: T0 + 15_000, cpuSeconds: 2.5, memoryBytes: 3 * GIB, rxBytes: 160 }),
    );
    assert.equal(second.inc.intervalSeconds, 5);
    assert.equal(second.inc.cpuSeconds, 0.5);
    assert.equal(second.inc.memoryGbSeconds, 10);
    assert.equal(second.inc.rxBytes, 60);
  });

  it('a wake starts the counters again: only time since the wake counts', () => {
    const before = increment(null, reading({ at: T0 + 5_000, cpuSeconds: 40, memoryBytes: GIB }));
    // Hibernated for an hour, woken at T0 + 1 h, sampled 2 s later.
    const woken = T0 + 3600_000;
    const after = increment(
      before.state,
      reading({ at: woken + 2_000, startedAt: woken, cpuSeconds: 1, memoryBytes: GIB / 2 }),
    );
    assert.equal(after.inc.intervalSeconds, 2);
    assert.equal(after.inc.cpuSeconds, 1);
    assert.equal(after.inc.memoryGbSeconds, 1);
    assert.equal(counterDelta(5, 7), 5);
    assert.equal(counterDelta(9, 7), 2);
  });

  it('an unknown CPU or memory counts as nothing used, not as a reset', () => {
    const a = increment(null, reading({ at: T0 + 1_000, cpuSeconds: 3 }));
    const b = increment(a.state, reading({ at: T0 + 2_000, cpuSeconds: null, memoryBytes: null }));
    assert.equal(b.inc.cpuSeconds, 0);
    assert.equal(b.inc.memoryGbSeconds, 0);
    const c = increment(b.state, reading({ at: T0 + 3_000, cpuSeconds: 3.5 }));
    assert.equal(c.inc.cpuSeconds, 0.5);
  });
});

describe('usage grouping', () => {
  const s = (id: string, labels: Record<string, string>, cpu: number): SandboxUsage => ({
    sandbox_id: id,
    org_id: id.startsWith('a') ? 'org_a' : 'org_b',
    template: 'base',
    labels,
    cpu_seconds: cpu,
    memory_gb_seconds: 1,
    sandbox_seconds: 10,
    disk_bytes_peak: 100,
    net_rx_bytes: 1,
    net_tx_bytes: 2,
  });
  const all = [
    s('a1', { team: 'red' }, 1),
    s('a2', { team: 'blue' }, 5),
    s('b1', { team: 'red' }, 2),
    s('b2', {}, 0.5),
  ];

  it('groups by a label, sandboxes without it under null, the largest CPU first', () => {
    const groups = groupUsage(all, parseGroupBy('label:team'));
    assert.deepEqual(
      groups.map((g) => [g.key, g.sandboxes, g.cpu_seconds, g.disk_bytes_peak]),
      [
        ['blue', 1, 5, 100],
        ['red', 2, 3, 200],
        [null, 1, 0.5, 100],
      ],
    );
  });

  it('groups by organisation and by template', () => {
    const orgs = groupUsage(all, parseGroupBy('organisation'));
    assert.deepEqual(
      orgs.map((g) => [g.key, g.sandboxes, g.sandbox_seconds, g.net_tx_bytes]),
      [
        ['org_a', 2, 20, 4],
        ['org_b', 2, 20, 4],
      ],
    );
    assert.deepEqual(
      groupUsage(all, parseGroupBy('template')).map((g) => [g.key, g.sandboxes]),
      [['base', 4]],
    );
  });
});

useFakeTemplates();

for (const kind of STORE_KINDS)
  describe(`usage sampling and API (fake driver, ${kind} store)`, () => {
    let home = '';
    let fx: Fx;
    before(async () => {
      home = mkdtempSync('/tmp/wu-');
      fx = await start(home, { usageSampleMs: 100, ...(await storeOptions(kind)) });
    });
    after(async () => {
      try {
        await fx?.p.close();
      } finally {
        rmSync(home, { recursive: true, force: true });
      }
    });

    it('samples live sandboxes; series and totals by label, scoped to the organisation', async () => {
      const sbx = await fx.create({ metadata: { team: 'red' } });
      const series = await waitFor(
        async () => {
          const m = await fx.json(`/v1/sandboxes/${sbx.id}/metrics`);
          return m.samples.length >= 3 && m;
        },
        { what: 'three usage samples' },
      );
      assert.equal(series.sample_interval_ms, 100);
      const last = series.samples.at(-1);
      assert.ok(last.memory_bytes > 0, 'the fake reports the guest process RSS');
      assert.equal(last.disk_bytes, null, 'the fake has no disk of its own');
      assert.ok(series.totals.sandbox_seconds > 0 && series.totals.memory_gb_seconds > 0);

      await fx.json(`/v1/sandboxes/${sbx.id}`, { method: 'DELETE' });
      const usage: Json = await fx.json('/v1/usage?group_by=label:team');
      const red = usage.groups.find((g: Json) => g.key === 'red');
      assert.equal(red?.sandboxes, 1);
      assert.ok(red.sandbox_seconds >= series.totals.sandbox_seconds);

      // Another organisation sees none of it, and not the sandbox.
      const org: Json = await fx.json('/v1/orgs', { method: 'POST', json: { name: 'other' } });
      const key: Json = await fx.json('/v1/keys', {
        method: 'POST',
        json: { name: 'reader', scopes: ['sandboxes:read'], org_id: org.id },
      });
      const as = (path: string) =>
        fetch(fx.p.url + path, { headers: { authorization: `Bearer ${key.key}` } });
      assert.equal((await as(`/v1/sandboxes/${sbx.id}/metrics`)).status, 404);
      const theirs: Json = await (await as('/v1/usage')).json();
      assert.deepEqual(theirs.groups, []);
      assert.equal((await as('/v1/usage?org_id=org_default')).status, 404);
      // A key restricted to other labels sees none of the red sandbox's usage.
      const blue: Json = await fx.json('/v1/keys', {
        method: 'POST',
        json: { name: 'blue', scopes: ['sandboxes:read'], sandbox_labels: { team: 'blue' } },
      });
      const seen: Json = await (
        await fetch(`${fx.p.url}/v1/usage?group_by=label:team`, {
          headers: { authorization: `Bearer ${blue.key}` },
        })
      ).json();
      assert.deepEqual(seen.groups, []);
      const bad = await fx.api('/v1/usage?from=2026-12-02T10:00:00Z&to=2026-12-01T10:00:00Z');
      assert.equal(bad.status, 400);
      assert.equal((await fx.api('/v1/usage?group_by=colour')).status, 400);
    });

    it('counts ranges older than the sample retention in whole hours, kept past the purge', async () => {
      const db = fx.p.context.store.db;
      const hour = new Date(Date.now() - 3 * 24 * 3600_000);
      hour.setUTCMinutes(0, 0, 0);
      await db
        .insertInto('usage_sandboxes')
        .values({
          sandbox_id: 'sbx_purged0000000000',
          org_id: 'org_default',
          template: 'old',
          labels: '{"team":"gone"}',
          last_at: hour.toISOString(),
          last_started_at: hour.toISOString(),
          last_cpu_seconds: 0,
          last_memory_bytes: 0,
          last_net_rx_bytes: 0,
          last_net_tx_bytes: 0,
        })
        .execute();
      await db
        .insertInto('usage_hours')
        .values(
          [0, 1].map((n) => ({
            sandbox_id: 'sbx_purged0000000000',
            hour: new Date(hour.getTime() + n * 3600_000).toISOString(),
            cpu_seconds: 100,
            memory_gb_seconds: 50,
            sandbox_seconds: 3600,
            disk_bytes_peak: 1000 * (n + 1),
            net_rx_bytes: 10,
            net_tx_bytes: 20,
          })),
        )
        .execute();
      // A range inside the first hour counts that hour whole; one over both counts both.
      const inFirst = new Date(hour.getTime() + 10 * 60_000).toISOString();
      const one: Json = await fx.json(
        `/v1/usage?group_by=template&from=${inFirst}&to=${inFirst.replace(':10:', ':20:')}`,
      );
      assert.deepEqual(
        one.groups.map((g: Json) => [g.key, g.cpu_seconds]),
        [['old', 100]],
      );
      const all: Json = await fx.json(
        `/v1/usage?group_by=label:team&from=${new Date(hour.getTime() - 3600_000).toISOString()}`,
      );
      const gone = all.groups.find((g: Json) => g.key === 'gone');
      assert.deepEqual(
        [gone.cpu_seconds, gone.sandbox_seconds, gone.disk_bytes_peak, gone.net_tx_bytes],
        [200, 7200, 2000, 40],
      );
      assert.ok(
        all.groups.some((g: Json) => g.key === 'red'),
        'recent samples are counted too',
      );
    });
  });
