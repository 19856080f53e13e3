/**
 * Restart reconciliation with the FAKE driver: after the platform restarts, a
 * sandbox whose guest agent still runs is taken back, one that died is lost.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { FakeDriver } from '../../../host-agent/src/runtime/fake/driver';
import { errorOf, start, useFakeTemplates, type Fx, type Json } from './fake-platform';

useFakeTemplates();

describe('restart reconciliation (fake driver)', () => {
  it('reattaches to a sandbox still running and marks one that died meanwhile lost', async () => {
    const home = mkdtempSync('/tmp/wl-');
    const survivors = new Map<string, ChildProcess>();
    const originalList = FakeDriver.prototype.list;
    let first: Fx | undefined;
    let second: Fx | undefined;
    try {
      first = await start(home, { destroyOnClose: false });
      const kept = await first.create({ env: { KEPT: 'yes' }, metadata: { role: 'kept' } });
      const doomed = await first.create({ memory_mb: 256 });
      // A background process: still listed by the same guest agent after the restart.
      const bg = await first.json(`/v1/sandboxes/${kept.id}/processes`, {
        method: 'POST',
        json: { cmd: 'true' },
      });
      const running = (first.driver as unknown as { running: Map<string, ChildProcess> }).running;
      for (const [id, child] of running) survivors.set(id, child);
      await first.p.close(); // without destroying: the guest agents keep running
      first = undefined;

      // The doomed sandbox's process dies while the platform is down.
      const victim = survivors.get(doomed.id);
      assert.ok(victim && victim.exitCode === null && victim.signalCode === null);
      const died = new Promise((r) => victim.once('exit', r));
      victim.kill('SIGKILL');
      await died;

      // The fake keeps its sandboxes in memory, so a new FakeDriver knows none of them.
      // Stand in for a runtime whose state outlives the process (as runsc's --root does):
      // the next driver adopts the processes that are still alive.
      FakeDriver.prototype.list = async function (this: FakeDriver) {
        const mine = (this as unknown as { running: Map<string, ChildProcess> }).running;
        for (const [id, child] of survivors) {
          if (child.exitCode === null && child.signalCode === null) mine.set(id, child);
        }
        survivors.clear();
        return originalList.call(this);
      };
      second = await start(home);
      FakeDriver.prototype.list = originalList;

      const back = await second.json(`/v1/sandboxes/${kept.id}`);
      assert.equal(back.state, 'running');
      assert.deepEqual(back.metadata, { role: 'kept' });
      const r = await second.json(`/v1/sandboxes/${kept.id}/exec`, {
        method: 'POST',
        json: { cmd: 'sh', args: ['-c', 'echo "$KEPT"'] },
      });
      assert.equal(r.stdout, 'yes\n', 'the sandbox env came back with the hello');
      const procs = await second.json(`/v1/sandboxes/${kept.id}/processes`);
      assert.ok(
        procs.items.some((p: Json) => p.pid === bg.pid),
        'the same guest agent answers (it still lists the earlier process)',
      );

      const lost = await second.json(`/v1/sandboxes/${doomed.id}`);
      assert.deepEqual([lost.state, lost.stop_reason], ['stopped', 'lost']);
      const exec = await second.api(`/v1/sandboxes/${doomed.id}/exec`, {
        method: 'POST',
        json: { cmd: 'true' },
      });
      assert.equal((await errorOf(exec)).code, 'SANDBOX_NOT_RUNNING');

      await second.p.host.settle();
      assert.deepEqual(second.dirs(), [kept.id]);
      const health = await second.json('/v1/health');
      assert.equal(
        health.hosts[0].memory_reserved_mb,
        kept.memory_mb,
        'only the reattached one is reserved',
      );
      assert.equal(health.hosts[0].sandboxes, 1);
      assert.deepEqual(await second.driver.list(), [kept.id]);
    } finally {
      FakeDriver.prototype.list = originalList;
      await first?.p.close().catch(() => undefined);
      await second?.p.close().catch(() => undefined);
      for (const child of survivors.values()) child.kill('SIGKILL');
      rmSync(home, { recursive: true, force: true });
    }
  });
});
