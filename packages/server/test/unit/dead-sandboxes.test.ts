/**
 * Sandboxes whose runtime died: a recorder host says which are live and
 * whether the OOM killer struck (real store, SQLite and PostgreSQL, and lifecycle).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import type { HostApi } from '@warren/protocol';
import { loadConfig } from '../../src/config';
import { DeadSandboxes } from '../../src/sandboxes/dead';
import { SandboxLifecycle } from '../../src/sandboxes/lifecycle';
import type { Store } from '../../src/store/store';
import { VolumeService } from '../../src/volume-service';
import { sandboxRecord } from './records';
import { openTestStore, STORE_KINDS, useTestStores } from './stores';

useTestStores();

for (const kind of STORE_KINDS)
  describe(`dead sandboxes on ${kind}`, () => {
    const dir = mkdtempSync('/tmp/wdead-');
    const live = new Set<string>();
    const oom = new Set<string>();
    const destroyed: string[] = [];
    const host = {
      id: 'host_test',
      sandboxes: {
        live: async () => [...live],
        oomKilled: async (id: string) => oom.has(id),
        destroy: async (id: string) => void destroyed.push(id),
      },
    } as unknown as HostApi;
    let store: Store;
    let dead: DeadSandboxes;

    before(async () => {
      store = await openTestStore(kind);
      await store.ensureOrganisation('org_a', 'a');
      const config = loadConfig({}, { home: dir });
      const lifecycle = new SandboxLifecycle(
        store,
        host,
        config,
        new VolumeService(store, host, config),
        Date.now,
      );
      dead = new DeadSandboxes(store, host, lifecycle);
    });
    after(async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('stops a sandbox missing on two sweeps, out of memory when the OOM killer struck', async () => {
      const now = new Date().toISOString();
      const [alive, killed, lost, back] = [0, 1, 2, 3].map(() =>
        sandboxRecord({ created_at: now }),
      );
      for (const r of [alive!, killed!, lost!, back!]) await store.insertSandbox(r, 'test');
      live.add(alive!.id);
      oom.add(killed!.id);
      assert.deepEqual(await dead.reap(), [], 'one miss is not enough');
      live.add(back!.id); // listed again (a transition was under way)
      const reaped = await dead.reap();
      assert.deepEqual(
        reaped.sort((a, b) => a.id.localeCompare(b.id)),
        [
          { id: killed!.id, cause: 'out of memory' },
          { id: lost!.id, cause: 'lost' },
        ].sort((a, b) => a.id.localeCompare(b.id)),
      );
      assert.deepEqual(destroyed.sort(), [killed!.id, lost!.id].sort());
      const row = await store.getSandboxById(killed!.id);
      assert.equal(row?.state, 'stopped');
      assert.equal(row?.stop_reason, 'out of memory');
      const events = await store.sandboxEvents(killed!.id);
      assert.equal(events.at(-1)?.cause, 'out of memory');
      assert.equal((await store.getSandboxById(alive!.id))?.state, 'running');
      assert.equal((await store.getSandboxById(back!.id))?.state, 'running');
      assert.deepEqual(await dead.reap(), [], 'stopped ones are not looked at again');
    });
  });
