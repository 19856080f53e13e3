/**
 * Archive lag: the archiver's passes over a ready database against a host
 * whose outbox and collection a test controls (real SQLite store, real
 * webhook outbox), from a waiting file to one exceeded episode and back.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { WarrenError, type FileInfo, type HostApi } from '@warren/protocol';
import { loadConfig } from '../../src/config';
import { DatabaseArchiver } from '../../src/databases/archiver';
import type { DatabaseProvisioner } from '../../src/databases/provision';
import { DatabaseQueries, type DatabaseRecord } from '../../src/store/databases';
import type { Store } from '../../src/store/store';
import { WebhookService } from '../../src/webhooks/service';
import { openTestStore, STORE_KINDS, useTestStores } from './stores';

useTestStores();

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The outbox of one database's sandbox, and whether listing and collecting work. */
class FakeOutbox {
  files = new Map<string, number>(); // name -> mtime (ms)
  archived: string[] = [];
  collectFails = false;
  listFails = false;

  host(): HostApi {
    const entry = (name: string, mtime: number): FileInfo => ({
      name,
      path: `/outbox/${name}`,
      type: 'file',
      size: 16 << 20,
      mode: '600',
      mtime: new Date(mtime).toISOString(),
    });
    return {
      id: 'host_test',
      files: {
        // As the host agent's: a sandbox it cannot reach throws at once, not in a promise.
        list: () => {
          if (this.listFails) throw new Error('guest agent unreachable');
          return Promise.resolve({ items: [...this.files].map(([n, m]) => entry(n, m)) });
        },
      },
      archive: {
        collect: async (_sandbox: string, _dir: string, prefix: string) => {
          if (this.listFails) throw new Error('guest agent unreachable');
          const ready = [...this.files.keys()].sort();
          if (ready.length > 0 && this.collectFails)
            throw new WarrenError('DATABASE_FENCED', 'archive belongs to epoch 2, not 1');
          this.files.clear();
          this.archived.push(...ready);
          return ready.map((n) => ({ key: `${prefix}${n}`, size: 16 << 20 }));
        },
      },
    } as unknown as HostApi;
  }
}

const WAL = ['000000010000000000000001', '000000010000000000000002', '000000010000000000000003'];

for (const kind of STORE_KINDS)
  describe(`archive lag on ${kind}`, () => {
    const dir = mkdtempSync('/tmp/wal-lag-');
    const outbox = new FakeOutbox();
    const config = loadConfig(
      { WARREN_DB_ARCHIVE_LAG_SECONDS: '1', WARREN_DB_ARCHIVE_POLL_MS: '50' },
      { home: dir },
    );
    const quiet = { warn: () => undefined };
    let store: Store;
    let queries: DatabaseQueries;
    let webhooks: WebhookService;
    let db: DatabaseRecord;

    const archiver = () => {
      const a = new DatabaseArchiver(
        outbox.host(),
        queries,
        {} as DatabaseProvisioner,
        config,
        quiet,
      );
      // As the platform wires it.
      a.lag.onEvent = (rec, type, report) => webhooks.emitQuietly(rec.org_id, type, report, quiet);
      return a;
    };
    const lagEvents = async () =>
      (await queries.events(db.id)).filter((e) => e.kind.startsWith('archive_lag'));
    const sent = async (): Promise<Json[]> => {
      await new Promise((r) => setTimeout(r, 50)); // emitQuietly writes the outbox row in the background
      const rows = await store.db.selectFrom('webhook_outbox').select('payload').execute();
      return rows.map((r) => JSON.parse(r.payload) as Json);
    };

    before(async () => {
      store = await openTestStore(kind);
      await store.ensureOrganisation('org_a', 'a');
      queries = new DatabaseQueries(store.db);
      webhooks = new WebhookService(
        store,
        {
          retryScale: 1,
          timeoutMs: 1000,
          disableAfterMs: 60_000,
          secretGraceMs: 1000,
          pollMs: 50,
          retentionMs: 3600_000,
        },
        quiet,
      );
      await webhooks.create('org_a', { url: 'http://127.0.0.1:9/hook', events: ['database.*'] });
      db = {
        id: 'db_lag0000000000001',
        org_id: 'org_a',
        label: 'orders',
        state: 'ready',
        host_id: 'host_test',
        sandbox_id: 'sbx_db0000000000001',
        volume_id: 'vol_db0000000000001',
        cpu: 1,
        memory_mb: 512,
        disk_mb: 1024,
        password: 'x',
        scale_to_zero_seconds: 0,
        archive_timeout_seconds: 60,
        epoch: 1,
        parent_id: null,
        restored_to: null,
        metadata: {},
        created_at: new Date().toISOString(),
        last_archived_wal: null,
        last_archived_at: null,
        last_base_backup_at: new Date().toISOString(), // no base backup is due
        last_base_backup_lsn: '0/2000028',
        last_connection_at: null,
      };
      await queries.insert(db, 'created');
    });
    after(async () => {
      await webhooks.dispatcher.stop();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('is 0 while collection works, and opens one episode when a file waits past the limit', async () => {
      const a = archiver();
      assert.equal(a.lag.seconds(db.id), null, 'not measured before a pass');
      outbox.files.set(WAL[0]!, Date.now());
      await a.pass();
      assert.deepEqual(outbox.archived, [WAL[0]]);
      assert.equal(a.lag.seconds(db.id), 0);
      assert.deepEqual(await lagEvents(), []);

      // The fence refuses: the next file has waited 5 s by its mtime.
      outbox.collectFails = true;
      outbox.files.set(WAL[1]!, Date.now() - 5000);
      await a.pass();
      const lag = a.lag.seconds(db.id)!;
      assert.ok(lag >= 5 && lag < 10, `lag ${lag}`);
      const events = await lagEvents();
      assert.equal(events.length, 1);
      assert.equal(events[0]!.kind, 'archive_lag_exceeded');
      assert.match(events[0]!.message, new RegExp(`${WAL[1]} has waited for \\d+ s.*epoch 2`));
      const [hook] = await sent();
      assert.equal(hook.type, 'database.archive_lag_exceeded');
      assert.deepEqual(
        { ...hook.data, lag_seconds: 0 },
        {
          database_id: db.id,
          label: 'orders',
          lag_seconds: 0,
          oldest_wal: WAL[1],
          last_archived_wal: WAL[0],
          last_archived_at: (await queries.byId(db.id))!.last_archived_at,
          error: 'archive belongs to epoch 2, not 1',
        },
      );
      assert.ok(hook.data.lag_seconds >= 5);

      // Postgres's retry copies the file again (a fresh mtime): it has still waited since first seen.
      outbox.files.set(WAL[1]!, Date.now());
      await new Promise((r) => setTimeout(r, 120)); // past the listing interval
      await a.pass();
      assert.ok(a.lag.seconds(db.id)! >= 5);
      assert.equal((await lagEvents()).length, 1, 'one event per episode');
    });

    it('keeps the open episode across a restart and closes it when collection works again', async () => {
      const a = archiver(); // a new control plane: the episode is read from the events
      await a.pass();
      assert.ok(a.lag.seconds(db.id)! >= 0);
      assert.equal((await lagEvents()).length, 1, 'not sent again after a restart');
      outbox.collectFails = false;
      await a.pass();
      assert.equal(a.lag.seconds(db.id), 0);
      assert.deepEqual(outbox.archived, [WAL[0], WAL[1]]);
      const events = await lagEvents();
      assert.deepEqual(
        events.map((e) => e.kind),
        ['archive_lag_exceeded', 'archive_lag_recovered'],
      );
      const hooks = await sent();
      assert.deepEqual(
        hooks.map((h) => h.type),
        ['database.archive_lag_exceeded', 'database.archive_lag_recovered'],
      );
      assert.equal(hooks[1].data.lag_seconds, 0);
      assert.equal(hooks[1].data.last_archived_wal, WAL[1]);
      assert.equal(hooks[1].data.error, undefined);
    });

    it('counts from the last successful collection when the outbox cannot be listed', async () => {
      const a = archiver();
      await a.pass(); // a successful collection of an empty outbox
      outbox.listFails = true;
      outbox.files.set(WAL[2]!, Date.now());
      await a.pass();
      assert.equal(a.lag.seconds(db.id), 0, 'just failed');
      assert.equal((await lagEvents()).length, 2);
      await new Promise((r) => setTimeout(r, 2100));
      await a.pass();
      assert.ok(a.lag.seconds(db.id)! >= 2);
      const events = await lagEvents();
      assert.equal(events.length, 3);
      assert.match(events[2]!.message, /nothing was collected for \d+ s.*unreachable/);
      outbox.listFails = false;
      await a.pass();
      assert.equal((await lagEvents()).at(-1)!.kind, 'archive_lag_recovered');
      // A database that is not ready is not measured.
      await queries.update(db.id, { state: 'hibernated' });
      await a.pass();
      assert.equal(a.lag.seconds(db.id), 0);
    });
  });
