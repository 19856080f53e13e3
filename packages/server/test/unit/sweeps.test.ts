/**
 * TTL expiry and idle hibernation with an injected clock: time moves when the
 * test says so, and nothing waits. The store is real (SQLite and PostgreSQL); the host is a
 * recorder of the three HostApi calls the sweeps make (logic only, no sandbox).
 */
import { after, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import type { HostApi } from '@warren/protocol';
import { loadConfig } from '../../src/config';
import { SandboxLifecycle } from '../../src/sandboxes/lifecycle';
import { CPU_WINDOW_MS, IdleSweeps } from '../../src/sandboxes/sweeps';
import type { SandboxRecord, Store } from '../../src/store/store';
import { VolumeService } from '../../src/volume-service';
import { sandboxRecord } from './records';
import { openTestStore, STORE_KINDS, useTestStores } from './stores';

useTestStores();

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

for (const kind of STORE_KINDS)
  describe(`TTL and idle sweeps (injected clock) on ${kind}`, () => {
    const dir = mkdtempSync('/tmp/wsw-');
    let store: Store;
    let now = T0;
    let calls: string[] = [];
    /** CPU time each sandbox has used, as the host reports it. */
    const cpuNs = new Map<string, number>();
    let lifecycle: SandboxLifecycle;
    let sweeps: IdleSweeps;

    const host = {
      id: 'host_test',
      sandboxes: {
        destroy: async (id: string) => void calls.push(`destroy ${id}`),
        hibernate: async (id: string) => {
          calls.push(`hibernate ${id}`);
          return { shared: false };
        },
        cpuUsageNs: async (id: string) => cpuNs.get(id) ?? null,
      },
    } as unknown as HostApi;

    async function sandbox(over: Partial<SandboxRecord> = {}): Promise<SandboxRecord> {
      const rec = sandboxRecord({
        org_id: 'org_default',
        template: 'base',
        memory_mb: 256,
        created_at: iso(now),
        expires_at: iso(now + 60_000),
        idle_timeout_seconds: 60,
        ...over,
      });
      await store.insertSandbox(rec, 'test');
      return rec;
    }

    const state = async (id: string) => (await store.getSandbox('org_default', id))?.state;

    beforeEach(async () => {
      if (!store) {
        store = await openTestStore(kind);
        await store.ensureOrganisation('org_default', 'default');
      }
      const config = loadConfig({}, { home: dir });
      const volumes = new VolumeService(store, host, config);
      lifecycle = new SandboxLifecycle(store, host, config, volumes, () => now);
      sweeps = new IdleSweeps(store, host, config, lifecycle);
      now += 24 * 3600_000; // every test starts on a day of its own
      calls = [];
      // Nothing a previous test left running takes part in this one.
      for (const r of await store.sandboxesOnHost('host_test', ['running', 'paused']))
        await store.setState(r.id, 'stopped', 'previous test');
    });
    after(async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('reaps a sandbox once its TTL has passed without activity', async () => {
      const sbx = await sandbox();
      now += 30_000;
      assert.deepEqual(await sweeps.reapExpired(), []);
      await lifecycle.activity(sbx.org_id, sbx.id); // expires now + 60 s
      now += 59_000;
      assert.deepEqual(await sweeps.reapExpired(), []);
      now += 2_000;
      assert.deepEqual(await sweeps.reapExpired(), [sbx.id]);
      assert.deepEqual(calls, [`destroy ${sbx.id}`]);
      const rec = await store.getSandbox(sbx.org_id, sbx.id);
      assert.equal(rec?.state, 'stopped');
      assert.equal(rec?.stop_reason, 'ttl_expired');
    });

    it('never reaps a persistent sandbox, and an open request moves the deadline', async () => {
      const persistent = await sandbox({ persistent: 1 });
      const busy = await sandbox();
      const end = lifecycle.beginOperation(busy.id);
      now += 120_000;
      assert.deepEqual(await sweeps.reapExpired(), []);
      assert.equal(await state(persistent.id), 'running');
      const moved = await store.getSandbox(busy.org_id, busy.id);
      assert.equal(moved?.expires_at, iso(now + 60_000));
      end();
      now += 61_000;
      assert.deepEqual(await sweeps.reapExpired(), [busy.id]);
      assert.deepEqual(calls, [`destroy ${busy.id}`]);
    });

    it('hibernates a persistent sandbox idle past its timeout, only with low CPU', async () => {
      const idle = await sandbox({ persistent: 1, idle_timeout_seconds: 60 });
      const busy = await sandbox({ persistent: 1, idle_timeout_seconds: 60 });
      cpuNs.set(idle.id, 0);
      cpuNs.set(busy.id, 0);
      // The first sweep only takes a CPU sample.
      assert.deepEqual(await sweeps.hibernateIdle(), []);
      now += 61_000;
      cpuNs.set(idle.id, 1e6); // 1 ms of CPU in 61 s
      cpuNs.set(busy.id, 30_500e6); // half a CPU
      assert.deepEqual(await sweeps.hibernateIdle(), [idle.id]);
      assert.deepEqual(calls, [`hibernate ${idle.id}`]);
      assert.equal(await state(idle.id), 'hibernated');
      assert.equal(await state(busy.id), 'running');
    });

    it('averages CPU over windows of at least CPU_WINDOW_MS, not over one short sweep', async () => {
      const sbx = await sandbox({ persistent: 1, idle_timeout_seconds: 60 });
      cpuNs.set(sbx.id, 0);
      now += 61_000;
      await sweeps.hibernateIdle(); // the window starts
      now += 200;
      cpuNs.set(sbx.id, 15e6); // 15 ms in 200 ms would be 7.5 %
      assert.deepEqual(await sweeps.hibernateIdle(), [], 'no complete window yet');
      now += CPU_WINDOW_MS - 200;
      assert.deepEqual(await sweeps.hibernateIdle(), [sbx.id], '15 ms in 1 s is 1.5 %');
    });

    it('keeps a sandbox busy over a whole window from hibernating', async () => {
      const sbx = await sandbox({ persistent: 1, idle_timeout_seconds: 60 });
      cpuNs.set(sbx.id, 0);
      now += 61_000;
      await sweeps.hibernateIdle();
      now += CPU_WINDOW_MS;
      cpuNs.set(sbx.id, 300e6); // 30 % of a CPU
      assert.deepEqual(await sweeps.hibernateIdle(), []);
      now += 200; // within the next window, the last complete one still counts
      assert.deepEqual(await sweeps.hibernateIdle(), []);
    });

    it('does not hibernate before the idle timeout, nor with a request open', async () => {
      const sbx = await sandbox({ persistent: 1, idle_timeout_seconds: 300 });
      cpuNs.set(sbx.id, 0);
      await sweeps.hibernateIdle();
      now += 200_000;
      assert.deepEqual(await sweeps.hibernateIdle(), [], 'not idle long enough');
      now += 200_000;
      const end = lifecycle.beginOperation(sbx.id);
      assert.deepEqual(await sweeps.hibernateIdle(), [], 'a request is open');
      end();
      now += 5_000; // the next sweep: CPU use is measured between two samples
      assert.deepEqual(await sweeps.hibernateIdle(), [sbx.id]);
    });
  });
