/**
 * HostApi contract, second half: lifecycle, captures, snapshots, volumes and
 * reconciliation after a restart of the agent. Registered by contract.ts.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '@warren/protocol';
import { rejectsWith, sh, type Ctx } from './contract';

export function hostApiChecks2(ctx: Ctx): void {
  it('pauses and resumes; hibernates and wakes with processes and files', async () => {
    const { host } = ctx;
    const id = await ctx.create({ env: { WHO: 'before' } });
    await sh(host, id, 'echo kept > /root/f; (sleep 600 & echo $! > /root/pid)');
    await host.sandboxes.pause(id);
    await host.sandboxes.resume(id);
    assert.equal((await sh(host, id, 'cat /root/f')).stdout, 'kept\n');
    const reserved = (await host.capacity()).memory_reserved_mb;
    await host.sandboxes.hibernate(id);
    assert.equal((await host.capacity()).memory_reserved_mb, reserved - 256);
    await rejectsWith(sh(host, id, 'true'), 'SANDBOX_NOT_RUNNING');
    await host.sandboxes.wake(id, { env: { WHO: 'after' } });
    const r = await sh(
      host,
      id,
      'cat /root/f; test -e /proc/$(cat /root/pid) && echo alive; echo $WHO',
    );
    assert.equal(r.stdout, 'kept\nalive\nafter\n');
  });

  it('forks from a capture while the parent runs; a released capture is gone', async () => {
    const { host } = ctx;
    const parent = await ctx.create();
    await sh(host, parent, 'echo parent > /root/mark');
    const capture = await host.sandboxes.capture(parent);
    assert.ok(capture.paused_ms >= 0);
    const children = await Promise.all(
      [1, 2].map(() => ctx.create({ from: { kind: 'capture', capture_id: capture.capture_id } })),
    );
    await host.sandboxes.releaseCapture(capture.capture_id);
    for (const child of children) {
      assert.equal((await sh(host, child, 'cat /root/mark')).stdout, 'parent\n');
      assert.equal((await sh(host, child, 'hostname')).stdout.trim(), child.replace(/_/g, '-'));
    }
    await sh(host, children[0]!, 'echo child > /root/mark');
    assert.equal((await sh(host, parent, 'cat /root/mark')).stdout, 'parent\n');
    await rejectsWith(
      ctx.create({ from: { kind: 'capture', capture_id: capture.capture_id } }),
      'INVALID_REQUEST',
    );
  });

  it('a disk-only fork keeps files and runs none of the captured processes', async () => {
    const { host } = ctx;
    const parent = await ctx.create();
    await sh(host, parent, 'echo disk > /root/mark; (sleep 600 & echo $! > /root/pid)');
    const capture = await host.sandboxes.capture(parent);
    const child = await ctx.create({
      from: { kind: 'capture', capture_id: capture.capture_id },
      reset_processes: true,
    });
    await host.sandboxes.releaseCapture(capture.capture_id);
    const r = await sh(host, child, 'cat /root/mark; test -e /proc/$(cat /root/pid) || echo gone');
    assert.equal(r.stdout, 'disk\ngone\n');
  });

  it('snapshots into the store, restores from it, deletes it', async () => {
    const { host } = ctx;
    const id = await ctx.create();
    await sh(host, id, 'echo snap > /root/mark');
    const snapId = newId('snapshot');
    const snap = await host.sandboxes.snapshot(id, snapId);
    assert.ok(snap.size_bytes > 0);
    const copy = await ctx.create({ from: { kind: 'snapshot', snapshot_id: snapId } });
    assert.equal((await sh(host, copy, 'cat /root/mark')).stdout, 'snap\n');
    await host.snapshots.delete(snapId);
    await assert.rejects(ctx.create({ from: { kind: 'snapshot', snapshot_id: snapId } }));
  });

  it('hibernates with its image put into the store: it wakes here, and restores from there', async () => {
    const { host } = ctx;
    const id = await ctx.create();
    await sh(host, id, 'echo slept > /root/f; (sleep 600 & echo $! > /root/pid)');
    const imageId = newId('snapshot');
    assert.deepEqual(await host.sandboxes.hibernate(id, { image_id: imageId }), { shared: true });
    const copy = await ctx.create({ from: { kind: 'snapshot', snapshot_id: imageId } });
    const check = 'cat /root/f; test -e /proc/$(cat /root/pid) && echo alive';
    assert.equal((await sh(host, copy, check)).stdout, 'slept\nalive\n');
    await host.sandboxes.wake(id, { env: {} });
    assert.equal((await sh(host, id, check)).stdout, 'slept\nalive\n');
    await host.snapshots.delete(imageId);
    // Without an image id (undefined, also as it crosses the wire) nothing is shared.
    assert.deepEqual(await host.sandboxes.hibernate(id, undefined), { shared: false });
  });

  it('checks and changes network policies', async () => {
    const { host } = ctx;
    await rejectsWith(
      host.sandboxes.checkNetwork({
        policy: { mode: 'restricted', allow: ['bad host!'] },
        secrets: [],
      }),
      'INVALID_NETWORK_POLICY',
    );
    const id = await ctx.create();
    await host.sandboxes.setNetwork(id, { policy: { mode: 'none' }, secrets: [] });
    await rejectsWith(
      host.sandboxes.setNetwork(newId('sandbox'), { policy: { mode: 'none' }, secrets: [] }),
      'SANDBOX_NOT_RUNNING',
    );
  });

  it('makes and removes volumes', async () => {
    const { host } = ctx;
    const vol = newId('volume');
    await host.volumes.create(vol, 64);
    assert.equal(typeof (await host.volumes.usedBytes(vol)), 'number');
    await host.volumes.remove(vol);
    await rejectsWith(
      host.volumes.create(newId('volume'), 1024 * 1024 * 1024),
      'INSUFFICIENT_CAPACITY',
    );
  });

  it('after a restart takes back what runs and reports what is lost', async () => {
    const home = ctx.fx.home();
    const first = await ctx.fx.open(home);
    const id = newId('sandbox');
    const req = { id, cpu: 1, memory_mb: 256, env: { K: 'v' } };
    await first.sandboxes.create({
      ...req,
      template: ctx.fx.template,
    });
    await sh(first, id, 'echo survived > /root/mark');
    await first.close(); // the sandbox goes on running
    const second = await ctx.fx.open(home);
    try {
      const gone = newId('sandbox');
      const lost = await second.sandboxes.reconcile(
        [
          { id, memory_mb: 256, env: req.env },
          { id: gone, memory_mb: 256, env: {} },
        ],
        [],
      );
      assert.deepEqual(lost, [gone]);
      assert.equal((await sh(second, id, 'cat /root/mark; echo $K')).stdout, 'survived\nv\n');
      assert.equal((await second.capacity()).memory_reserved_mb, 256);
    } finally {
      await second.close({ destroy: true });
    }
  });
}
