/**
 * The PostgreSQL store restarting under traffic: requests made while it is
 * down fail at once with 503 STORE_UNAVAILABLE (never a 500, never a hang),
 * the platform recovers by itself when it is back, and nothing is lost: the
 * sandbox made before still answers and its record is whole.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startLocalPostgres, type LocalPostgres } from '../../packages/server/src/store/pg-local';
import { createSandbox, exec, startTestPlatform, type TestPlatform } from '../fixture';
import { waitFor } from '../wait';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('the PostgreSQL store restarting', () => {
  let pg: LocalPostgres;
  let p: TestPlatform;

  before(async () => {
    pg = await startLocalPostgres({ unsafeNoFsync: true });
    p = await startTestPlatform({ databaseUrl: pg.url });
  });
  after(async () => {
    await p?.stop();
    await pg?.stop();
  });

  it('answers 503 STORE_UNAVAILABLE while it is down and recovers by itself', async () => {
    const id = await createSandbox(p, { template: 'base', metadata: { kept: 'yes' } });
    try {
      const statuses = new Map<string, number>();
      let stop = false;
      const traffic = (async () => {
        while (!stop) {
          const res = await p.api(`/v1/sandboxes/${id}`, { signal: AbortSignal.timeout(10_000) });
          const body = (await res.json()) as Json;
          const key = res.ok ? '200' : `${res.status} ${body.error.code}`;
          statuses.set(key, (statuses.get(key) ?? 0) + 1);
        }
      })();
      await waitFor(() => statuses.has('200'), { what: 'traffic under way' });
      await pg.restart();
      // Back by itself: the pool replaces the connections the restart cut.
      await waitFor(async () => (await p.api(`/v1/sandboxes/${id}`)).status === 200, {
        timeoutMs: 20_000,
        what: 'the platform answering again',
      });
      stop = true;
      await traffic;
      for (const key of statuses.keys())
        assert.match(key, /^(200|503 STORE_UNAVAILABLE)$/, JSON.stringify([...statuses]));
      assert.ok((statuses.get('200') ?? 0) > 0);
      // The restart was seen: requests during it got the clear error.
      assert.ok((statuses.get('503 STORE_UNAVAILABLE') ?? 0) > 0, JSON.stringify([...statuses]));
      // Nothing lost: the record is whole, the sandbox answers, and a new one can be made.
      const sbx = await p.json<Json>(`/v1/sandboxes/${id}`);
      assert.deepEqual([sbx.state, sbx.metadata], ['running', { kept: 'yes' }]);
      assert.equal((await exec(p, id, { cmd: 'echo', args: ['after'] })).stdout, 'after\n');
      const second = await createSandbox(p);
      await p.api(`/v1/sandboxes/${second}`, { method: 'DELETE' });
    } finally {
      await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    }
  });
});
