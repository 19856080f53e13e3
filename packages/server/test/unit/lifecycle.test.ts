/**
 * Lifecycle logic of the control plane and host agent with the FAKE driver
 * (guest agents as plain host processes): memory admission, clean failure and
 * TTL expiry. No isolation is involved, so nothing here is a feature test.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { waitUntil } from '../../../../test/wait';
import { TEMPLATE, errorOf, start, useFakeTemplates, type Fx, type Json } from './fake-platform';

useFakeTemplates();

describe('admission, failure and TTL (fake driver)', () => {
  let home = '';
  let fx: Fx;
  before(async () => {
    home = mkdtempSync('/tmp/wl-');
    fx = await start(home);
  });
  after(async () => {
    try {
      await fx?.p.close();
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('admits against the memory budget and refuses what does not fit, leaving nothing behind', async () => {
    const first = await fx.create({ memory_mb: 600 });
    const ids = [first.id as string];
    try {
      assert.equal(first.state, 'running');
      assert.equal(first.memory_mb, 600);
      assert.equal(await fx.reservedMb(), 600);
      const rows = await fx.rowIds();
      const dirs = fx.dirs();
      const restores = fx.driver.calls.filter((c) => c.op === 'restore').length;

      const refused = await fx.api('/v1/sandboxes', {
        method: 'POST',
        json: { template: TEMPLATE, memory_mb: 600 },
      });
      const err = await errorOf(refused);
      assert.equal(err.status, 503);
      assert.equal(err.code, 'INSUFFICIENT_CAPACITY');
      const details = err.details as { requested_mb: number; short_reserved_mb: number };
      assert.deepEqual([details.requested_mb, details.short_reserved_mb], [600, 200]);

      assert.deepEqual(await fx.rowIds(), rows, 'no store row for the refused sandbox');
      const listed = await fx.json('/v1/sandboxes');
      assert.deepEqual(
        listed.items.map((s: Json) => s.id),
        [first.id],
      );
      assert.deepEqual((await fx.json('/v1/sandboxes?state=creating')).items, []);
      assert.deepEqual(fx.dirs(), dirs, 'no directory for the refused sandbox');
      assert.equal(await fx.reservedMb(), 600, 'reservation unchanged');
      assert.equal(
        fx.driver.calls.filter((c) => c.op === 'restore').length,
        restores,
        'refused without trying',
      );

      // Exactly the rest of the budget still fits; then nothing more does.
      const rest = await fx.create({ memory_mb: 400 });
      ids.push(rest.id);
      assert.equal(await fx.reservedMb(), 1000);
      const full = await fx.api('/v1/sandboxes', {
        method: 'POST',
        json: { template: TEMPLATE, memory_mb: 64 },
      });
      assert.equal((await errorOf(full)).code, 'INSUFFICIENT_CAPACITY');

      // Deleting gives the memory back.
      await fx.json(`/v1/sandboxes/${rest.id}`, { method: 'DELETE' });
      assert.equal(await fx.reservedMb(), 600);
      const health = await fx.json('/v1/health');
      assert.equal(health.hosts[0].sandboxes, 1);
      assert.equal(health.runtime.driver, 'fake');
    } finally {
      for (const id of ids) await fx.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    }
    assert.equal(await fx.reservedMb(), 0);
  });

  /**
   * A create with the driver's `op` failing once: checks its RUNTIME_ERROR and
   * that nothing of the sandbox is left (the host agent undid its part, the
   * runtime destroyed the half-made container).
   */
  const failedCreate = async (
    op: 'restore' | 'limitCpu',
    body: Record<string, unknown>,
  ): Promise<void> => {
    await fx.p.host.settle(); // earlier deletes finish their teardown in the background
    const rows = await fx.rowIds();
    const dirs = fx.dirs();
    const reserved = await fx.reservedMb();
    const calls = fx.driver.calls.length;

    fx.driver.failNext(op);
    const res = await fx.api('/v1/sandboxes', {
      method: 'POST',
      json: { template: TEMPLATE, ...body },
    });
    const err = await errorOf(res);
    assert.equal(err.status, 500);
    assert.equal(err.code, 'RUNTIME_ERROR');
    assert.match(err.message, new RegExp(`injected ${op} failure`));

    const made = fx.driver.calls.slice(calls);
    const failed = made.find((c) => c.op === op);
    assert.ok(failed, `calls: ${JSON.stringify(made)}`);
    assert.ok(
      made.some((c) => c.op === 'destroy' && c.id === failed.id),
      'runtime cleanup',
    );
    assert.ok(!(await fx.driver.list()).includes(failed.id));

    assert.deepEqual(await fx.rowIds(), rows, 'no store row');
    assert.equal((await fx.api(`/v1/sandboxes/${failed.id}`)).status, 404);
    assert.deepEqual(fx.dirs(), dirs, 'no directory');
    assert.ok(!existsSync(join(fx.home, 'sandboxes', failed.id)));
    assert.equal(await fx.reservedMb(), reserved, 'reservation released');
  };

  it('a failed restore is a RUNTIME_ERROR that leaves no row, no directory and no reservation', async () => {
    await failedCreate('restore', { memory_mb: 256 });
    const reserved = await fx.reservedMb();
    // The failure was one-shot: the next create works.
    const ok = await fx.create({ memory_mb: 256 });
    try {
      assert.equal(ok.state, 'running');
      assert.equal(await fx.reservedMb(), reserved + 256);
    } finally {
      await fx.json(`/v1/sandboxes/${ok.id}`, { method: 'DELETE' });
    }
  });

  it('a restored sandbox is held to its cpu; a failure to hold it undoes the create', async () => {
    await fx.p.host.settle();
    const held = await fx.create({ cpu: 2, memory_mb: 256 });
    try {
      assert.equal(fx.driver.cpuLimits.get(held.id), 2);
      const ops = fx.driver.calls.filter((c) => c.id === held.id).map((c) => c.op);
      assert.deepEqual(ops.slice(0, 2), ['restore', 'limitCpu'], 'limited after the restore');
    } finally {
      await fx.json(`/v1/sandboxes/${held.id}`, { method: 'DELETE' });
    }
    await failedCreate('limitCpu', { cpu: 1 });
  });

  it('TTL: an idle sandbox expires at the sweep; activity pushes expires_at forward', async () => {
    const idle = await fx.create({ ttl_seconds: 1 });
    const busy = await fx.create({ ttl_seconds: 1 });
    try {
      assert.equal(busy.ttl_seconds, 1);
      const firstExpiry = Date.parse(busy.expires_at);
      await waitUntil(
        Date.parse(busy.last_activity_at) + 500,
        'half the TTL to pass since the busy one was created',
      );
      const ran = await fx.json(`/v1/sandboxes/${busy.id}/exec`, {
        method: 'POST',
        json: { cmd: 'true' },
      });
      assert.equal(ran.exit_code, 0);
      const touched = await fx.json(`/v1/sandboxes/${busy.id}`);
      const newExpiry = Date.parse(touched.expires_at);
      assert.ok(newExpiry >= firstExpiry + 450, `expires_at moved ${newExpiry - firstExpiry} ms`);
      assert.equal(newExpiry - Date.parse(touched.last_activity_at), 1000);

      // The idle one is past its TTL, the busy one is not.
      await waitUntil(idle.expires_at, "the idle one's TTL to pass");
      assert.ok(Date.now() < newExpiry, 'the busy one has not expired yet');
      await fx.p.sweeper.sweep();
      const gone = await fx.json(`/v1/sandboxes/${idle.id}`);
      assert.deepEqual([gone.state, gone.stop_reason], ['stopped', 'ttl_expired']);
      assert.ok(gone.stopped_at);
      assert.equal((await fx.json(`/v1/sandboxes/${busy.id}`)).state, 'running');
      assert.equal(fx.p.host.isLive(idle.id), false);
      const refused = await fx.api(`/v1/sandboxes/${idle.id}/exec`, {
        method: 'POST',
        json: { cmd: 'true' },
      });
      assert.equal((await errorOf(refused)).code, 'SANDBOX_NOT_RUNNING');

      // Without further activity the busy one expires too.
      await waitUntil(newExpiry, "the busy one's new expiry to pass");
      await fx.p.sweeper.sweep();
      const later = await fx.json(`/v1/sandboxes/${busy.id}`);
      assert.deepEqual([later.state, later.stop_reason], ['stopped', 'ttl_expired']);
      await fx.p.host.settle();
      assert.equal(await fx.reservedMb(), 0);
      assert.deepEqual(fx.dirs(), []);
      const events = await fx.p.context.store.sandboxEvents(idle.id);
      assert.deepEqual(
        events.map((e) => `${e.to_state}:${e.cause}`),
        [
          'creating:create',
          'running:restored from template snapshot',
          'stopping:ttl_expired',
          'stopped:ttl_expired',
        ],
      );
    } finally {
      for (const id of [idle.id, busy.id])
        await fx.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    }
  });
});
