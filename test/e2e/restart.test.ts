import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { clearCpuQuota, cpuQuotaOf, createSandbox, exec, startTestPlatform } from '../fixture';

describe('platform restart (real gVisor)', () => {
  it('keeps the admin token, reattaches to running sandboxes and keeps hibernated ones', async () => {
    const home = mkdtempSync('/tmp/wt-');
    try {
      const first = await startTestPlatform({ home, destroyOnClose: false, keepHome: true });
      const token = first.adminToken;
      assert.equal(readFileSync(join(home, 'admin-token'), 'utf8').trim(), token);
      let id: string;
      let sleeper: string;
      try {
        // One sandbox hibernated across the restart, one running through it.
        sleeper = await createSandbox(first, {
          template: 'base',
          memory_mb: 128,
          persistent: true,
        });
        await first.api(`/v1/sandboxes/${sleeper}/files?path=/root/dream.txt`, {
          method: 'PUT',
          body: 'hibernated',
        });
        assert.equal(
          (await first.api(`/v1/sandboxes/${sleeper}/hibernate`, { method: 'POST' })).status,
          200,
        );
        id = await createSandbox(first, { template: 'base', cpu: 1, env: { KEPT: 'yes' } });
        await first.api(`/v1/sandboxes/${id}/files?path=/root/state.txt`, {
          method: 'PUT',
          body: 'before restart',
        });
        await first.json(`/v1/sandboxes/${id}/processes`, {
          method: 'POST',
          json: { cmd: 'sleep', args: ['600'] },
        });
      } finally {
        await first.close();
      }
      // As if the host agent had stopped between a restore and holding the sandbox to its cpu.
      await clearCpuQuota(home, id);
      assert.equal(await cpuQuotaOf(home, id), -1);
      const second = await startTestPlatform({ home });
      try {
        assert.equal(second.adminToken, token, 'the same token works after a restart');
        assert.equal(await cpuQuotaOf(home, id), 100_000, 'held to its cpu again');
        const sbx = await second.json(`/v1/sandboxes/${id}`);
        assert.equal(sbx.state, 'running');
        const r = await exec(second, id, {
          cmd: 'sh',
          args: ['-c', 'cat /root/state.txt; echo " $KEPT"; pgrep -c sleep || ls /proc | head -1'],
        });
        assert.match(r.stdout, /^before restart yes\n/);
        // The hibernated one is still hibernated, and wakes on use.
        assert.equal((await second.json(`/v1/sandboxes/${sleeper}`)).state, 'hibernated');
        const dream = await exec(second, sleeper, { cmd: 'cat', args: ['/root/dream.txt'] });
        assert.equal(dream.stdout, 'hibernated');
        const woken = await second.json(`/v1/sandboxes/${sleeper}`);
        assert.deepEqual([woken.state, woken.persistent], ['running', true]);
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('a start that fails late (its database port is taken) leaves nothing mounted or listening', async () => {
    const home = mkdtempSync('/tmp/wt-');
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const dbPort = (taken.address() as AddressInfo).port;
    try {
      await assert.rejects(startTestPlatform({ home, dbPort, keepHome: true }));
      const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
        .split('\n')
        .filter((l) => l.includes(home));
      assert.deepEqual(mounts, [], 'the volume pool and the disks made ahead of time are gone');
      // The home can go: nothing below it is busy.
      rmSync(home, { recursive: true });
    } finally {
      taken.close();
      rmSync(home, { recursive: true, force: true });
    }
  });
});
