/**
 * Two control planes on one PostgreSQL store, as behind a load balancer: one
 * leads the shared background work (store/leader.ts) and the other takes
 * over when it stops; a webhook message goes out once, whichever control
 * plane the event happened on; and each control plane sweeps its own
 * in-process host (TTL) whether it leads or not.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startLocalPostgres, type LocalPostgres } from '../../packages/server/src/store/pg-local';
import { createSandbox, startTestPlatform, type TestPlatform } from '../fixture';
import { waitFor } from '../wait';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Takes each delivery's payload, and answers after 1.5 s. */
async function slowReceiver(onEvent: (e: Json) => void) {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      onEvent(JSON.parse(Buffer.concat(chunks).toString()));
      setTimeout(() => res.writeHead(204).end(), 1500);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

describe('two control planes on one PostgreSQL store', () => {
  let pg: LocalPostgres;
  let a: TestPlatform | null = null;
  let b: TestPlatform;
  let rx: { url: string; close(): void } | null = null;
  const got: Json[] = [];
  const leads = async (p: TestPlatform) => (await p.json<Json>('/v1/health')).leader as boolean;
  const start = (hostId: string) =>
    startTestPlatform({
      databaseUrl: pg.url,
      hostId,
      leaderRetryMs: 300,
      sweepIntervalMs: 300,
    });

  before(async () => {
    rx = await slowReceiver((event) => got.push(event));
    pg = await startLocalPostgres({ unsafeNoFsync: true });
    a = await start('host_cpa');
    b = await start('host_cpb');
  });
  after(async () => {
    rx?.close();
    await b?.stop();
    await a?.stop();
    await pg?.stop();
  });

  it('one leads; webhooks go out once; each sweeps its own host; the other takes over', async () => {
    assert.equal(await leads(a!), true, 'the first one started leads');
    assert.equal(await leads(b), false);
    // The receiver answers slowly: a second control plane polling the outbox would send again.
    const ep = await b.json<Json>('/v1/webhooks', {
      method: 'POST',
      json: { url: rx!.url, events: ['sandbox.state_changed'] },
    });
    assert.match(ep.id, /^wh/);
    // On b's own host, with a short TTL: b sweeps it although it does not lead.
    const id = await createSandbox(b, { template: 'base', ttl_seconds: 1 });
    assert.equal((await b.context.store.getSandboxById(id))!.host_id, 'host_cpb');
    const stopped = await waitFor(
      async () => {
        const s = await b.json<Json>(`/v1/sandboxes/${id}`);
        return s.state === 'stopped' && s;
      },
      { timeoutMs: 20_000, what: 'the sandbox expired' },
    );
    assert.equal(stopped.stop_reason, 'ttl_expired');
    const states = () =>
      got.filter((e) => e.data.sandbox.id === id).map((e) => e.data.to_state as string);
    await waitFor(async () => states().includes('stopped'), { what: 'the stop delivered' });
    // Both control planes poll the outbox: a second delivery would come within a poll.
    await new Promise((r) => setTimeout(r, 2000));
    assert.deepEqual(states(), ['running', 'stopped']);

    await a!.stop();
    a = null;
    await waitFor(() => leads(b), { timeoutMs: 10_000, what: 'b leading' });
    const next = await createSandbox(b);
    await b.api(`/v1/sandboxes/${next}`, { method: 'DELETE' });
    await waitFor(
      async () => got.some((e) => e.data.sandbox.id === next && e.data.to_state === 'stopped'),
      {
        what: 'b delivering',
      },
    );
  });
});
