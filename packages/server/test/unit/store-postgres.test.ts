/**
 * The store on both databases: values keep their types (64-bit integers,
 * doubles, 0/1 flags, JSON text) and a duplicate name is VOLUME_EXISTS. On
 * PostgreSQL only, what SQLite's single writer (and one process's locks)
 * gave for free: control planes starting together migrate once, concurrent
 * attaches of one volume let one writer win, a quota of one admits one of
 * two concurrent creates, concurrent state changes record a true chain;
 * and a bad WARREN_DATABASE_URL fails with one line naming the problem.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { newId, WarrenError } from '@warren/protocol';
import { openPostgresStore } from '../../src/store/postgres';
import { loadConfig } from '../../src/config';
import { QuotaQueries } from '../../src/quotas/queries';
import { QuotaService } from '../../src/quotas/service';
import type { Store } from '../../src/store/store';
import { AuditQueries, type AuditFilter } from '../../src/store/audit';
import { UsageQueries } from '../../src/store/usage';
import { VolumeQueries } from '../../src/store/volumes';
import { WebhookQueries } from '../../src/store/webhooks';
import { sandboxRecord } from './records';
import {
  newDatabase,
  openAt,
  openTestStore,
  STORE_KINDS,
  testCluster,
  useTestStores,
} from './stores';
import { startLocalPostgres } from '../../src/store/pg-local';

useTestStores();

const NOW = '2030-06-01T12:00:00.000Z';

const volume = (name: string) => ({
  id: newId('volume'),
  org_id: 'org_a',
  name,
  host_id: 'host_test',
  size_mb: 64,
  created_at: NOW,
});

const isCode = (code: string) => (e: unknown) => e instanceof WarrenError && e.code === code;

for (const kind of STORE_KINDS)
  describe(`store values on ${kind}`, () => {
    it('keeps 64-bit integers, doubles, flags and JSON as the control plane wrote them', async () => {
      const store = await openTestStore(kind);
      try {
        await store.ensureOrganisation('org_a', 'a');
        const sbx = sandboxRecord({
          created_at: NOW,
          cpu: 0.1,
          persistent: 1,
          metadata: { 'a.b': 'ü "q"' },
        });
        await store.insertSandbox(sbx, 'test');
        const got = await store.getSandbox('org_a', sbx.id);
        assert.equal(got?.cpu, 0.1);
        assert.equal(got?.persistent, 1);
        assert.deepEqual(got?.metadata, { 'a.b': 'ü "q"' });

        const big = 5 * 2 ** 32 + 7; // past 32 bits
        for (const id of ['snp_a', 'snp_b'])
          await store.insertSnapshot({
            id,
            org_id: 'org_a',
            host_id: 'host_test',
            sandbox_id: sbx.id,
            template: 'base',
            cpu: 1,
            memory_mb: 128,
            env: {},
            size_bytes: big,
            parent_pause_ms: 12.345678901234,
            created_at: NOW,
            lineage: [],
            disk_mb: null,
            network: { policy: { mode: 'none' }, secrets: [] },
          });
        const snap = await store.getSnapshot('org_a', 'snp_a');
        assert.equal(snap?.size_bytes, big);
        assert.equal(snap?.parent_pause_ms, 12.345678901234);
        // sum() of bigints is numeric on PostgreSQL: still a number here.
        assert.equal(await new QuotaQueries(store.db).snapshotBytes('org_a'), 2 * big);
        assert.deepEqual(await store.countSandboxesByState(), { running: 1 });
        assert.strictEqual(await store.countTokens(), 0);

        // Epoch milliseconds in the outbox, and min() of them.
        const webhooks = new WebhookQueries(store.db);
        const due = Date.parse(NOW);
        await webhooks.enqueue([
          {
            endpoint_id: 'whe_x',
            message_id: 'msg_1',
            event_type: 'sandbox.created',
            payload: '{}',
            state: 'pending',
            attempts: 0,
            next_attempt_at: due,
            created_at: NOW,
          },
        ]);
        const [row] = await store.db.selectFrom('webhook_outbox').selectAll().execute();
        assert.strictEqual(row?.next_attempt_at, due);
        assert.strictEqual(typeof row?.id, 'number');

        // Samples of one hour add up, and the disk peak is the larger one.
        const usage = new UsageQueries(store.db);
        const last = {
          sandbox_id: sbx.id,
          org_id: 'org_a',
          template: 'base',
          labels: '{}',
          last_at: NOW,
          last_started_at: NOW,
          last_cpu_seconds: 0,
          last_memory_bytes: 0,
          last_net_rx_bytes: 0,
          last_net_tx_bytes: 0,
        };
        for (const disk of [3 * 2 ** 32, 2 ** 32])
          await usage.record(last, {
            sandbox_id: sbx.id,
            at: NOW,
            interval_seconds: 5,
            cpu_seconds: 0.25,
            memory_bytes: 2 ** 33,
            memory_gb_seconds: 40,
            disk_bytes: disk,
            net_rx_bytes: 2 ** 40,
            net_tx_bytes: 1,
          });
        const [hour] = await usage.hourFigures(
          '2030-06-01T12:00:00.000Z',
          '2030-06-01T13:00:00.000Z',
          null,
        );
        assert.deepEqual(hour, {
          sandbox_id: sbx.id,
          cpu_seconds: 0.5,
          memory_gb_seconds: 80,
          sandbox_seconds: 10,
          disk_bytes_peak: 3 * 2 ** 32,
          net_rx_bytes: 2 ** 41,
          net_tx_bytes: 2,
        });

        // Audit filters: an action prefix, a status range, a time window.
        const audit = new AuditQueries(store.db);
        for (const [action, status] of [
          ['POST /v1/sandboxes', 201],
          ['POST /v1/volumes', 409],
          ['DELETE /v1/sandboxes/:id', 200],
        ] as const)
          await audit.insert({
            at: NOW,
            org_id: 'org_a',
            actor: 'tok_x',
            action,
            resource_type: null,
            resource_id: null,
            status,
            error_code: status >= 400 ? 'VOLUME_EXISTS' : null,
            request_id: `req_${status}`,
          });
        const actions = async (f: AuditFilter) =>
          (await audit.list('org_a', f, 10)).map((e) => e.action);
        assert.deepEqual(await actions({ action: 'POST*' }), [
          'POST /v1/volumes',
          'POST /v1/sandboxes',
        ]);
        assert.deepEqual(await actions({ action: 'post*' }), [], 'actions are case-sensitive');
        assert.deepEqual(await actions({ result: 'failure' }), ['POST /v1/volumes']);
        assert.equal((await actions({ since: NOW, until: '2030-06-01T12:00:00.001Z' })).length, 3);

        const volumes = new VolumeQueries(store.db);
        await volumes.insert(volume('data'));
        await assert.rejects(volumes.insert(volume('data')), isCode('VOLUME_EXISTS'));
        // Names compare case-sensitively on both, and order byte by byte.
        await volumes.insert(volume('Data'));
        await volumes.insert(volume('_x'));
        assert.deepEqual(
          (await volumes.list('org_a')).map((v) => v.name),
          ['Data', '_x', 'data'],
        );
      } finally {
        await store.close();
      }
    });
  });

describe('store on PostgreSQL: several control planes on one database', () => {
  const twoStores = async (): Promise<[Store, Store]> => {
    const url = await newDatabase('postgres');
    const a = await openAt('postgres', url);
    const b = await openAt('postgres', url);
    await a.ensureOrganisation('org_a', 'a');
    return [a, b];
  };

  it('migrates once when control planes start at the same time', async () => {
    const url = await newDatabase('postgres');
    const stores = await Promise.all([1, 2, 3, 4].map(() => openPostgresStore(url)));
    try {
      const applied = await stores[0]!.db
        .selectFrom('kysely_migration' as never)
        .select('name' as never)
        .execute();
      const names = applied.map((r) => (r as { name: string }).name);
      assert.equal(names.length, new Set(names).size, 'no migration ran twice');
      assert.ok(names.includes('0011_usage'), names.join(','));
      // Every one of them can use the schema.
      await Promise.all(stores.map((s, i) => s.ensureOrganisation(`org_${i}`, `${i}`)));
      assert.equal(
        (await stores[3]!.db.selectFrom('organisations').selectAll().execute()).length,
        4,
      );
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
    // A later start finds nothing left to do.
    const again = await openPostgresStore(url);
    await again.close();
  });

  it('lets one writer win when two attach the same volume at once', async () => {
    const [a, b] = await twoStores();
    try {
      const qa = new VolumeQueries(a.db);
      const qb = new VolumeQueries(b.db);
      const req = [{ name: 'shared', mount_path: '/data', read_only: false }];
      await qa.insert(volume('shared'));
      for (let round = 0; round < 10; round++) {
        const results = await Promise.allSettled([
          qa.attach('org_a', `sbx_a${round}`, req),
          qb.attach('org_a', `sbx_b${round}`, req),
        ]);
        const won = results.filter((r) => r.status === 'fulfilled');
        assert.equal(won.length, 1, `round ${round}: exactly one attach wins`);
        const lost = results.find((r) => r.status === 'rejected');
        assert.ok(lost && isCode('VOLUME_IN_USE')(lost.reason), String(lost?.reason));
        const holders = await qa.attachments((await qa.get('org_a', 'shared'))!.id);
        assert.equal(holders.length, 1);
        await qa.detachAll(holders[0]!.sandbox_id);
      }
      // An attach and a delete at once: one of them, never both.
      const vol = (await qa.get('org_a', 'shared'))!;
      const [attach, remove] = await Promise.allSettled([
        qa.attach('org_a', 'sbx_last', req),
        qb.deleteUnattached(vol),
      ]);
      assert.notEqual(attach.status, remove.status, 'exactly one of attach and delete succeeds');
      const held = await qa.attachments(vol.id);
      const exists = (await qa.get('org_a', 'shared')) !== undefined;
      assert.equal(exists, attach.status === 'fulfilled');
      assert.equal(held.length, attach.status === 'fulfilled' ? 1 : 0);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('admits one sandbox past a quota of one when two control planes create at once', async () => {
    const [a, b] = await twoStores();
    try {
      const defaults = loadConfig({}).quotaDefaults;
      const [qa, qb] = [new QuotaService(a, defaults), new QuotaService(b, defaults)];
      await qa.setOverrides('org_a', { sandboxes: 1 });
      const create = (q: QuotaService, store: Store, n: number) => {
        const rec = sandboxRecord({ created_at: NOW });
        return q.admitSandbox(
          'org_a',
          { id: rec.id, memoryMb: 128, diskMb: 0, counted: true },
          // A round trip between the check and the record, where the other could slip in.
          async () => {
            await store.countTokens();
            await store.insertSandbox(rec, `create ${n}`);
          },
        );
      };
      for (let round = 0; round < 5; round++) {
        const results = await Promise.allSettled([create(qa, a, 1), create(qb, b, 2)]);
        assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1, `round ${round}`);
        const refused = results.find((r) => r.status === 'rejected');
        assert.ok(refused && isCode('QUOTA_EXCEEDED')(refused.reason), String(refused?.reason));
        const live = await a.sandboxesOnHost('host_test', ['running']);
        assert.equal(live.length, 1);
        await a.setState(live[0]!.id, 'stopped', 'next round');
      }
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('records every state change with the state it really came from', async () => {
    const [a, b] = await twoStores();
    try {
      const sbx = sandboxRecord({ created_at: NOW });
      await a.insertSandbox(sbx, 'test');
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 ? a : b).setState(sbx.id, i % 3 ? 'paused' : 'running', `change ${i}`),
        ),
      );
      const events = await a.sandboxEvents(sbx.id);
      assert.equal(events.length, 21);
      for (let i = 1; i < events.length; i++)
        assert.equal(events[i]!.from_state, events[i - 1]!.to_state, `event ${i} follows ${i - 1}`);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe('store on PostgreSQL: a bad WARREN_DATABASE_URL', () => {
  it('fails the start with one line naming the URL and the reason, password hidden', async () => {
    const local = await testCluster();
    const tcp = await startLocalPostgres({ tcpHost: '127.0.0.1', unsafeNoFsync: true });
    try {
      const cases: [string, RegExp][] = [
        ['mysql://root:pw@127.0.0.1/warren', /must be a postgres:\/\/ URL/],
        [
          tcp.url.replace(tcp.password, 'wrong-password'),
          /postgres:\*\*\*@127\.0\.0\.1:\d+\/warren .*password authentication failed for user "postgres"/,
        ],
        [tcp.url.replace(/\/warren$/, '/missing'), /database "missing" does not exist/],
        // The socket-only cluster's port: nothing listens on TCP there.
        [`postgres://warren:secret@127.0.0.1:${local.port}/warren`, /ECONNREFUSED/],
      ];
      for (const [url, why] of cases) {
        const err = await openPostgresStore(url, { connectTimeoutMs: 5000 }).then(
          () => assert.fail(`${url} opened`),
          (e: unknown) => e as Error,
        );
        assert.match(err.message, why);
        assert.ok(!err.message.includes('wrong-password') && !err.message.includes('secret'));
        assert.ok(!err.message.includes('\n'), 'one line');
      }
    } finally {
      await tcp.stop();
    }
  });
});
