/**
 * Webhook logic without sandboxes: the retry schedule, filters and URLs, how
 * causes are named, the events the sweeps and reconcile produce (real SQLite
 * store, a recorder host), and the dispatcher against a loopback receiver.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { WarrenError, type HostApi, type Template } from '@warren/protocol';
import { loadConfig } from '../../src/config';
import { SandboxLifecycle } from '../../src/sandboxes/lifecycle';
import { IdleSweeps } from '../../src/sandboxes/sweeps';
import type { Store } from '../../src/store/store';
import { VolumeService } from '../../src/volume-service';
import { causeOf } from '../../src/webhooks/cause';
import { reportBuild, reportDatabase } from '../../src/webhooks/events';
import { checkFilters, checkUrl, matchesFilters } from '../../src/webhooks/filters';
import { reportedState, sandboxEvents } from '../../src/webhooks/sandbox-events';
import { RETRY_SCHEDULE_MS, retryDelay } from '../../src/webhooks/schedule';
import { WebhookService } from '../../src/webhooks/service';
import { sandboxRecord } from './records';
import { openTestStore, STORE_KINDS, useTestStores } from './stores';

useTestStores();

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err instanceof WarrenError ? err.code : String(err);
  }
  return null;
};

describe('webhook retry schedule', () => {
  it('is the Standard Webhooks schedule, about 27 hours in all, and scales', () => {
    assert.deepEqual(
      Array.from({ length: 9 }, (_, i) => retryDelay(i, 1)),
      [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000, null],
    );
    const total = RETRY_SCHEDULE_MS.reduce((a, b) => a + b, 0);
    assert.ok(total > 27 * 3600_000 && total < 28 * 3600_000);
    assert.equal(retryDelay(2, 0.001), 300);
    assert.equal(retryDelay(8, 0.001), null, 'eight attempts, then the message is failed');
  });
});

describe('webhook filters and URLs', () => {
  it('match exact types, families and *', () => {
    assert.ok(matchesFilters(['*'], 'database.created'));
    assert.ok(matchesFilters(['sandbox.*'], 'sandbox.state_changed'));
    assert.ok(!matchesFilters(['sandbox.*'], 'snapshot.created'));
    assert.ok(matchesFilters(['sandbox.*', 'database.created'], 'database.created'));
    assert.ok(!matchesFilters(['database.created'], 'database.restored'));
  });

  it('refuse unknown filters and non-http URLs with typed errors', () => {
    assert.equal(
      code(() => checkFilters(['sandbox.*', 'template.built', '*'])),
      null,
    );
    for (const bad of ['sandbox', 'sandboxes.*', 'sandbox.nope', '**', 'database.'])
      assert.equal(
        code(() => checkFilters([bad])),
        'INVALID_EVENT_FILTER',
        bad,
      );
    assert.equal(checkUrl('https://example.com/hook?x=1'), 'https://example.com/hook?x=1');
    for (const bad of ['ftp://example.com/', 'file:///etc/passwd', 'example.com', 'http://u:p@h/'])
      assert.equal(
        code(() => checkUrl(bad)),
        'INVALID_WEBHOOK_URL',
        bad,
      );
  });
});

describe('webhook causes', () => {
  it('names the key of an API request, and the sweeps’ and hosts’ causes', () => {
    assert.deepEqual(causeOf('pause (requested)', { keyId: 'tok_a', requestId: 'req_1' }), {
      kind: 'api',
      key_id: 'tok_a',
      request_id: 'req_1',
      detail: 'pause (requested)',
    });
    const kinds = [
      ['ttl_expired', 'ttl'],
      ['hibernate (idle for 301 s)', 'idle'],
      ['lost', 'host_lost'],
      ['out of memory', 'out_of_memory'],
      ['out of memory (database server died)', 'out_of_memory'],
      ['interrupted while creating', 'platform_restart'],
      ['platform shut down', 'platform_shutdown'],
      ['hibernate (database db_x scaled to zero)', 'database'],
      ['fork-tree failed', 'system'],
    ];
    for (const [detail, kind] of kinds) assert.equal(causeOf(detail!, null).kind, kind, detail);
  });

  it('reports wakes as woken, losses as lost, and skips stopping', () => {
    const change = (to_state: string, cause: string, from_state = 'running') => ({
      sandbox_id: 'sbx_x',
      from_state,
      to_state,
      cause,
      at: '',
    });
    assert.equal(
      reportedState(change('running', 'wake (implicit, on use)', 'hibernated')),
      'woken',
    );
    assert.equal(reportedState(change('running', 'resume (requested)', 'paused')), 'running');
    assert.equal(reportedState(change('stopped', 'lost')), 'lost');
    assert.equal(reportedState(change('stopped', 'ttl_expired', 'stopping')), 'stopped');
    assert.equal(reportedState(change('stopping', 'ttl_expired')), null);
  });
});

for (const kind of STORE_KINDS)
  describe(`webhook events and dispatcher (real store, loopback receiver) on ${kind}`, () => {
    const dir = mkdtempSync('/tmp/wwh-');
    const got: { headers: Record<string, string>; body: string }[] = [];
    let open = 0;
    let mostOpen = 0;
    let failFirst = 0;
    let answerAfterMs = 20;
    const server = createServer((req, res) => {
      open++;
      mostOpen = Math.max(mostOpen, open);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        got.push({
          headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
          body: Buffer.concat(chunks).toString(),
        });
        // Slow enough that a second delivery would overlap if one were started.
        setTimeout(() => {
          open--;
          res.writeHead(failFirst-- > 0 ? 500 : 200).end();
        }, answerAfterMs);
      });
    });
    let store: Store;
    let webhooks: WebhookService;
    let lifecycle: SandboxLifecycle;
    const calls: string[] = [];
    const host = {
      id: 'host_test',
      sandboxes: { destroy: async (id: string) => void calls.push(`destroy ${id}`) },
    } as unknown as HostApi;
    const settings = {
      timeoutMs: 2000,
      disableAfterMs: 60_000,
      secretGraceMs: 1000,
      pollMs: 50,
      retentionMs: 3600_000,
    };

    before(async () => {
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      store = await openTestStore(kind);
      await store.ensureOrganisation('org_a', 'a');
      webhooks = new WebhookService(store, { ...settings, retryScale: 0.05 }, console);
      sandboxEvents(store, webhooks, console);
      const config = loadConfig({}, { home: dir });
      lifecycle = new SandboxLifecycle(
        store,
        host,
        config,
        new VolumeService(store, host, config),
        Date.now,
      );
    });
    after(async () => {
      await webhooks.dispatcher.stop();
      await store.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      rmSync(dir, { recursive: true, force: true });
    });

    it('turns a TTL reap and a lost sandbox into events with their cause, one delivery at a time', async () => {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      const ep = await webhooks.create('org_a', { url, events: ['sandbox.*'] });
      const past = new Date(Date.now() - 3600_000).toISOString();
      const expired = sandboxRecord({ created_at: past });
      const lost = sandboxRecord({
        created_at: past,
        expires_at: new Date(Date.now() + 3600_000).toISOString(),
      });
      await store.insertSandbox(expired, 'test');
      await store.insertSandbox(lost, 'test');
      const sweeps = new IdleSweeps(store, host, loadConfig({}, { home: dir }), lifecycle);
      assert.deepEqual(await sweeps.reapExpired(), [expired.id]);
      await lifecycle.stopped(lost.id, 'lost'); // what reconcile does for a sandbox gone from its host
      // Both first attempts fail: a message waiting for its retry does not hold back the next one.
      failFirst = 2;
      webhooks.dispatcher.start();
      const deadline = Date.now() + 10_000;
      const logged = () => webhooks.deliveries('org_a', ep.id, 10);
      while ((await logged()).length < 4 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      const events = got.map((g) => new Webhook(ep.secret).verify(g.body, g.headers) as Json);
      assert.deepEqual(
        events.map((e) => [e.data.sandbox.id, e.data.state, e.data.cause.kind]),
        [
          [expired.id, 'stopped', 'ttl'],
          [lost.id, 'lost', 'host_lost'],
          [expired.id, 'stopped', 'ttl'],
          [lost.id, 'lost', 'host_lost'],
        ],
      );
      assert.equal(mostOpen, 1, 'one delivery at a time per endpoint');
      const log = await logged();
      assert.deepEqual(log.map((d) => [d.attempt, d.status_code]).reverse(), [
        [1, 500],
        [1, 500],
        [2, 200],
        [2, 200],
      ]);
    });
    it('waits for a slow delivery without polling while the next message is due', async () => {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/slow`;
      const ep = await webhooks.create('org_a', { url, events: ['quota.exceeded'] });
      answerAfterMs = 500;
      const before = got.length;
      let passes = 0;
      const due = webhooks.q.due.bind(webhooks.q);
      webhooks.q.due = (now) => (passes++, due(now));
      try {
        await webhooks.emit('org_a', 'quota.exceeded', { n: 1 });
        await webhooks.emit('org_a', 'quota.exceeded', { n: 2 });
        while (got.length < before + 2) await new Promise((r) => setTimeout(r, 20));
        // Two deliveries of 500 ms: a pass per event, per delivery's end, and the 50 ms poll at most.
        assert.ok(passes < 30, `${passes} passes`);
      } finally {
        webhooks.q.due = due;
        answerAfterMs = 20;
      }
      await webhooks.remove('org_a', ep.id);
    });

    it('reports template builds: built, failed once started, nothing for a refused request', async () => {
      const ep = await webhooks.create('org_a', {
        url: 'http://127.0.0.1:9/discard', // refused: only the outbox is looked at
        events: ['template.*'],
      });
      const quiet = { warn: () => undefined };
      const run = (build: (progress: (l: string) => void) => Promise<Template>) =>
        reportBuild(webhooks, quiet, 'org_a', 'tpl-x', build)(() => undefined);
      const built = { name: 'tpl-x' } as Template;
      await run(async (progress) => (progress('step 1'), built));
      const refused = new WarrenError('TEMPLATE_EXISTS', 'exists');
      await assert.rejects(run(async () => Promise.reject(refused)));
      const failed = new WarrenError('TEMPLATE_BUILD_FAILED', 'step 2 failed');
      await assert.rejects(run(async (progress) => (progress('step 1'), Promise.reject(failed))));
      await new Promise((r) => setTimeout(r, 50)); // emits are not awaited by the build
      const rows = await store.db
        .selectFrom('webhook_outbox')
        .select('payload')
        .where('endpoint_id', '=', ep.id)
        .orderBy('id')
        .execute();
      // Emits race each other and outbox ids are not sequential: compare in type order.
      const events = rows
        .map((r) => JSON.parse(r.payload) as Json)
        .sort((a, b) => String(a.type).localeCompare(String(b.type)));
      assert.deepEqual(
        events.map((e) => [e.type, e.data.template.name, e.data.error?.code]),
        [
          ['template.built', 'tpl-x', undefined],
          ['template.failed', 'tpl-x', 'TEMPLATE_BUILD_FAILED'],
        ],
      );
      await webhooks.remove('org_a', ep.id);
    });

    it('reports databases without their credentials', async () => {
      const ep = await webhooks.create('org_a', {
        url: 'http://127.0.0.1:9/discard',
        events: ['database.*'],
      });
      const db = {
        id: 'db_x',
        label: 'app',
        password: 'hunter2',
        connection_url: 'postgresql://app:hunter2@h/app',
        pooled_url: 'postgresql://app:hunter2@h:6432/app',
      } as unknown as Parameters<typeof reportDatabase>[3];
      const req = { principal: { orgId: 'org_a' }, log: { warn: () => undefined } };
      reportDatabase({ webhooks }, req, 'database.restored', db, { source_id: 'db_parent' });
      await new Promise((r) => setTimeout(r, 50));
      const row = await store.db
        .selectFrom('webhook_outbox')
        .select('payload')
        .where('endpoint_id', '=', ep.id)
        .executeTakeFirstOrThrow();
      assert.doesNotMatch(row.payload, /hunter2/);
      const event = JSON.parse(row.payload) as Json;
      assert.deepEqual(
        [event.type, event.data.database, event.data.source_id],
        ['database.restored', { id: 'db_x', label: 'app' }, 'db_parent'],
      );
      await webhooks.remove('org_a', ep.id);
    });

    it('purges finished messages and attempts past the retention, never pending ones', async () => {
      const count = async (table: 'webhook_outbox' | 'webhook_attempts') =>
        Number(
          (
            await store.db
              .selectFrom(table)
              .select((e) => e.fn.countAll().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        );
      assert.ok((await count('webhook_attempts')) > 0);
      await webhooks.q.purge(new Date(Date.now() - 3600_000).toISOString());
      assert.ok((await count('webhook_attempts')) > 0, 'recent ones are kept');
      await webhooks.q.purge(new Date(Date.now() + 1000).toISOString());
      assert.equal(await count('webhook_attempts'), 0);
      const left = await store.db.selectFrom('webhook_outbox').select('state').execute();
      assert.ok(left.every((r) => r.state === 'pending'));
    });
  });
