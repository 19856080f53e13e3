/**
 * Hosts: join tokens, heartbeats, leases and fencing, on both stores, with
 * recorder hosts behind the router (the transport and real agents are
 * covered by test/e2e/multi-host.test.ts).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import type { HostApi } from '@warren/protocol';
import { loadConfig } from '../../src/config';
import { HostRouter } from '../../src/hosts/router';
import { HostService } from '../../src/hosts/service';
import { SandboxLifecycle } from '../../src/sandboxes/lifecycle';
import type { Store } from '../../src/store/store';
import { VolumeService } from '../../src/volume-service';
import { sandboxRecord } from './records';
import { openAt, newDatabase, STORE_KINDS, useTestStores } from './stores';

useTestStores();

const recorder = (id: string, live: string[] = []) =>
  ({
    id,
    capacity: async () => ({ memory_budget_mb: 1000, memory_reserved_mb: 0, sandboxes: 0 }),
    templates: { list: async () => [{ name: 'base', state: 'ready' }] },
    sandboxes: {
      live: async () => live,
      reconcile: async () => [],
      destroy: async () => undefined,
    },
    close: async () => undefined,
  }) as unknown as HostApi;

const quiet = { info: () => undefined, warn: () => undefined };
const beat = (epoch: number, url = 'http://127.0.0.1:1') => ({
  epoch,
  url,
  capacity: { memory_budget_mb: 2000, memory_reserved_mb: 0, sandboxes: 0, memory_used_mb: 10 },
  version: 'test',
  templates: ['base'],
});

for (const kind of STORE_KINDS)
  describe(`hosts on ${kind}`, () => {
    const dir = mkdtempSync('/tmp/whosts-');
    const stores: Store[] = [];
    const connected: string[] = [];
    let where = '';

    async function controlPlane() {
      const store = await openAt(kind, where);
      stores.push(store);
      const local = recorder('host_local');
      const config = loadConfig({}, { home: dir });
      const router = new HostRouter(local, store);
      const lifecycle = new SandboxLifecycle(
        store,
        router,
        config,
        new VolumeService(store, router, config),
        Date.now,
      );
      const service = new HostService(store, router, lifecycle, {
        leaseMs: 1000,
        version: 'test',
        sharedSnapshots: false,
        log: quiet,
        connect: async (o) => {
          connected.push(`${o.id} ${o.url} ${o.credential.slice(0, 4)}`);
          return recorder(o.id);
        },
      });
      return { store, router, service };
    }

    before(async () => {
      where = await newDatabase(kind);
      const s = await openAt(kind, where);
      await s.migrate();
      await s.ensureOrganisation('org_a', 'a');
      await s.close();
    });
    after(async () => {
      for (const s of stores) await s.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('joins once per token, and refuses a taken id, a used token and a wrong credential', async () => {
      const { service, router } = await controlPlane();
      const t = await service.createJoinToken();
      assert.match(t.token, /^wjt_[0-9a-z]{32}$/);
      const joined = await service.join({ token: t.token, host_id: 'host_a' });
      assert.equal(joined.host_id, 'host_a');
      assert.equal(joined.epoch, 1);
      assert.match(joined.credential, /^whc_/);
      await assert.rejects(service.join({ token: t.token }), { code: 'JOIN_TOKEN_INVALID' });
      await assert.rejects(service.join({ token: 'wjt_nope' }), { code: 'JOIN_TOKEN_INVALID' });
      const t2 = await service.createJoinToken();
      await assert.rejects(service.join({ token: t2.token, host_id: 'host_a' }), {
        code: 'HOST_EXISTS',
      });
      await assert.rejects(service.join({ token: t2.token, host_id: 'host_local' }), {
        code: 'HOST_EXISTS',
      });
      // The token was not spent by the refused joins.
      const b = await service.join({ token: t2.token, host_id: 'host_b' });
      // host_b's credential does not make it host_a (a spoofed id).
      await assert.rejects(service.heartbeat('host_a', b.credential, beat(1)), {
        code: 'UNAUTHORIZED',
      });
      await assert.rejects(service.heartbeat('host_x', b.credential, beat(1)), {
        code: 'UNAUTHORIZED',
      });
      const r = await service.heartbeat('host_a', joined.credential, beat(1));
      assert.equal(r.state, 'active');
      assert.ok(router.connected('host_a'));
      assert.ok(connected.includes(`host_a http://127.0.0.1:1 whc_`));
      const hosts = await service.list();
      assert.deepEqual(
        hosts.map((h) => [h.id, h.state, h.connected, h.local]),
        [
          ['host_local', 'active', true, true],
          ['host_a', 'active', true, false],
          ['host_b', 'active', false, false],
        ],
      );
      assert.equal(hosts[1]!.capacity?.memory_budget_mb, 2000);
      assert.deepEqual(hosts[1]!.templates, ['base']);
    });

    it('loses a host past its lease: its sandboxes stop, it is fenced until it heartbeats the new epoch', async () => {
      const a = await controlPlane();
      const b = await controlPlane();
      const t = await a.service.createJoinToken();
      const j = await a.service.join({ token: t.token, host_id: 'host_c' });
      await a.service.heartbeat('host_c', j.credential, beat(1));
      const rec = sandboxRecord({ created_at: new Date().toISOString(), host_id: 'host_c' });
      await a.store.insertSandbox(rec, 'test');
      const row = await a.service.queries.get('host_c');
      const later = row!.lease_expires_at + 1;
      // Two control planes watch the same lease: one of them marks it lost.
      const [x, y] = await Promise.all([
        a.service.expireLeases(later),
        b.service.expireLeases(later),
      ]);
      assert.deepEqual(
        [...x, ...y].filter((h) => h === 'host_c'),
        ['host_c'],
      );
      const lost = await a.service.get('host_c');
      assert.equal(lost.state, 'lost');
      assert.equal(lost.epoch, 2);
      assert.match(lost.state_reason, /^lease expired: no heartbeat for 1\.0 s$/);
      // Whichever control plane won, both drop the connection (the loser at its next pass).
      await Promise.all([a.service.expireLeases(later), b.service.expireLeases(later)]);
      assert.equal(a.router.connected('host_c'), false);
      const sbx = await a.store.getSandboxById(rec.id);
      assert.equal(sbx?.state, 'stopped');
      assert.match(sbx?.stop_reason ?? '', /^host host_c lost \(lease expired/);
      // Back from a freeze: the old epoch is refused, with the epoch to come back under.
      await assert.rejects(
        a.service.heartbeat('host_c', j.credential, beat(1)),
        (err: Error & { code?: string; details?: unknown }) => {
          assert.equal(err.code, 'HOST_FENCED');
          assert.deepEqual(err.details, { epoch: 2 });
          return true;
        },
      );
      const back = await a.service.heartbeat('host_c', j.credential, beat(2));
      assert.deepEqual([back.state, back.epoch], ['active', 2]);
      assert.equal((await a.service.get('host_c')).state_reason, 'rejoined empty');
    });

    it('drains and removes', async () => {
      const { service, store } = await controlPlane();
      const t = await service.createJoinToken();
      const j = await service.join({ token: t.token, host_id: 'host_d' });
      await service.heartbeat('host_d', j.credential, beat(1));
      await store.insertSandbox(
        sandboxRecord({ created_at: new Date().toISOString(), host_id: 'host_d' }),
        'test',
      );
      assert.equal((await service.drain('host_d')).state, 'draining');
      // Snapshots are not shared here: nothing can move, and the reason says so.
      await service.drained();
      assert.equal(
        (await service.get('host_d')).state_reason,
        'drained by an admin: 0 sandboxes and 0 databases moved, 1 sandboxes left on it',
      );
      await assert.rejects(
        service.place({ template: 'base', memoryMb: 0, pinned: { hostId: 'host_d', why: 'hint' } }),
        {
          code: 'INSUFFICIENT_CAPACITY',
        },
      );
      await assert.rejects(service.remove('host_d'), { code: 'HOST_NOT_EMPTY' });
      await assert.rejects(service.drain('host_nope'), { code: 'HOST_NOT_FOUND' });
      await assert.rejects(service.remove('host_local'), { code: 'INVALID_STATE' });
      // A heartbeat keeps the drain.
      assert.equal((await service.heartbeat('host_d', j.credential, beat(1))).state, 'draining');
    });
  });
