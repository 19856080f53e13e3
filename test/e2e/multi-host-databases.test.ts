/**
 * Managed databases on joined hosts: the control plane (its own host
 * drained) and `warren agent` processes share an S3 snapshot store, which
 * holds the databases' WAL archive. A database on a drained agent moves to
 * another with every committed row; a database on an agent that is killed is
 * restored, after its lease, to the last archived WAL onto another agent,
 * under a new epoch, with every archived row. Both answer on the same URL.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Database } from '@warren/protocol';
import { removeHomes, startAgentProcess, stopAgent, type AgentProcess } from '../agents';
import { archiveNow, createDatabase, dropDatabase, withClient } from '../databases';
import { startTestPlatform, type TestPlatform } from '../fixture';
import { startS3, type TestS3 } from '../s3';
import { waitFor } from '../wait';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('a database on a host that is lost', () => {
  let p: TestPlatform;
  let s3: TestS3;
  const agents = new Map<string, AgentProcess>();

  async function startAgent(hostId: string): Promise<void> {
    const { token } = await p.json<{ token: string }>('/v1/hosts/join-tokens', {
      method: 'POST',
      json: {},
    });
    agents.set(
      hostId,
      await startAgentProcess({ controlPlane: p.url, hostId, token, s3: s3.config }),
    );
  }

  before(async () => {
    s3 = await startS3();
    // Heartbeats every third of the lease: 3 s lost live agents when the machine was loaded.
    p = await startTestPlatform({
      hostLeaseMs: 6000,
      dbPort: 0,
      snapshotStore: { kind: 's3', ...s3.config },
    });
    for (const hostId of ['host_d1', 'host_d2']) await startAgent(hostId);
    await waitFor(
      async () =>
        (await p.json<{ hosts: Array<{ connected: boolean }> }>('/v1/hosts')).hosts.every(
          (h) => h.connected,
        ),
      { what: 'the agents connected' },
    );
    // New work goes to the agents only.
    await p.json('/v1/hosts/host_local/drain', { method: 'POST' });
  });

  after(async () => {
    for (const a of agents.values()) await stopAgent(a);
    removeHomes([...agents.values()].map((a) => a.home));
    await p?.stop();
    await s3?.stop();
  });

  it('moves off a drained host with every committed row, on the same URL', async () => {
    const db = await createDatabase(p, { label: 'drained' });
    let drained = '';
    try {
      const first = (await p.context.databases.service.queries.byId(db.id))!;
      drained = first.host_id;
      await withClient(p, db.connection_url, async (c) => {
        await c.query('CREATE TABLE kept (n int)');
        await c.query('INSERT INTO kept SELECT generate_series(1, 500)');
      });
      // Committed just before the drain and never archived on its own: the move archives it.
      await withClient(p, db.connection_url, (c) => c.query('INSERT INTO kept VALUES (501)'));
      await p.json(`/v1/hosts/${drained}/drain`, { method: 'POST' });
      let reason = '';
      let last = '';
      await waitFor(
        async () =>
          ((last = JSON.stringify(
            ((await p.json<Json>(`/v1/databases/${db.id}/events`)).items as Json[]).at(-1),
          )),
          true) &&
          /: 0 sandboxes and 1 databases moved, 0 sandboxes left on it$/.test(
            (reason = (await p.json<Json>(`/v1/hosts/${drained}`)).state_reason),
          ),
        {
          timeoutMs: 120_000,
          what: () => `the drain done (${reason}; the database's last event: ${last})`,
        },
      );
      const back = await p.json<Database>(`/v1/databases/${db.id}`);
      assert.equal(back.state, 'ready');
      assert.equal(back.archive.epoch, 2);
      const now = (await p.context.databases.service.queries.byId(db.id))!;
      assert.notEqual(now.host_id, drained);
      assert.equal((await p.context.store.getSandboxById(back.sandbox_id))?.host_id, now.host_id);
      assert.equal(back.connection_url, db.connection_url);
      const n = await withClient(p, back.connection_url, (c) =>
        c.query('SELECT count(*)::int AS n, max(n) AS top FROM kept'),
      );
      assert.deepEqual([n.rows[0].n, n.rows[0].top], [501, 501]);
      await withClient(p, back.connection_url, (c) => c.query('INSERT INTO kept VALUES (502)'));
      const events = (await p.json<Json>(`/v1/databases/${db.id}/events`)).items as Json[];
      assert.deepEqual(
        events.slice(-2).map((e) => e.kind),
        ['moving', 'restored'],
      );
      assert.match(events.at(-1).message, new RegExp(`^moved off host ${drained}: restored`));
      // Nothing of it is left on the drained host.
      const old = await p.context.store.getSandboxById(first.sandbox_id);
      assert.equal(old?.state, 'stopped');
    } finally {
      await dropDatabase(p, db.id);
    }
    // The drained host goes; a new agent takes its place for the next test.
    assert.equal((await p.api(`/v1/hosts/${drained}`, { method: 'DELETE' })).status, 204);
    const a = agents.get(drained)!;
    agents.delete(drained);
    await stopAgent(a);
    removeHomes([a.home]);
    await startAgent('host_d3');
    await waitFor(async () => (await p.json<Json>('/v1/hosts/host_d3')).connected, {
      what: 'host_d3 connected',
    });
  });

  // Killed right after create: restored from its base backup if the one taken in the background
  // is done, or from the seed cluster and its whole archive if not (both give every archived row).
  it('is restored onto another host from its archive, with every archived row', async () => {
    const db = await createDatabase(p, { label: 'on-an-agent' });
    try {
      const first = (await p.context.databases.service.queries.byId(db.id))!;
      assert.match(first.host_id, /^host_d[123]$/);
      const sandbox = await p.context.store.getSandboxById(db.sandbox_id);
      assert.equal(sandbox?.host_id, first.host_id, 'its server runs where its volume is');
      await withClient(p, db.connection_url, async (c) => {
        await c.query('CREATE TABLE kept (n int)');
        await c.query('INSERT INTO kept SELECT generate_series(1, 500)');
      });
      await archiveNow(p, db);
      const victim = agents.get(first.host_id)!;
      victim.child.kill('SIGKILL');
      await new Promise((r) => victim.child.once('exit', r));
      const back = await waitFor(
        async () => {
          const v = await p.json<Database>(`/v1/databases/${db.id}`);
          return v.state === 'ready' && v.archive.epoch === 2 ? v : null;
        },
        { what: 'the database restored under epoch 2', timeoutMs: 180_000, intervalMs: 300 },
      );
      const now = (await p.context.databases.service.queries.byId(db.id))!;
      assert.notEqual(now.host_id, first.host_id);
      const survivor = now.host_id;
      assert.equal((await p.context.store.getSandboxById(back.sandbox_id))?.host_id, survivor);
      assert.equal(back.connection_url, db.connection_url);
      const n = await withClient(p, back.connection_url, (c) =>
        c.query('SELECT count(*)::int AS n FROM kept'),
      );
      assert.equal(n.rows[0].n, 500);
      const events = await p.json<{ items: Array<{ kind: string; message: string }> }>(
        `/v1/databases/${db.id}/events`,
      );
      assert.ok(
        events.items.some((e) => e.kind === 'restored'),
        JSON.stringify(events.items),
      );
      // Writes go on there.
      await withClient(p, back.connection_url, (c) => c.query('INSERT INTO kept VALUES (501)'));
    } finally {
      await dropDatabase(p, db.id);
    }
  });
});
