import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createSandbox, exec, startTestPlatform } from '../fixture';

describe('platform restart (real gVisor)', () => {
  it('keeps the admin token and reattaches to running sandboxes', async () => {
    const home = mkdtempSync('/tmp/wt-');
    try {
      const first = await startTestPlatform({ home, destroyOnClose: false, keepHome: true });
      const token = first.adminToken;
      assert.equal(readFileSync(join(home, 'admin-token'), 'utf8').trim(), token);
      let id: string;
      try {
        id = await createSandbox(first, { template: 'base', env: { KEPT: 'yes' } });
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
      const second = await startTestPlatform({ home });
      try {
        assert.equal(second.adminToken, token, 'the same token works after a restart');
        const sbx = await second.json(`/v1/sandboxes/${id}`);
        assert.equal(sbx.state, 'running');
        const r = await exec(second, id, {
          cmd: 'sh',
          args: ['-c', 'cat /root/state.txt; echo " $KEPT"; pgrep -c sleep || ls /proc | head -1'],
        });
        assert.match(r.stdout, /^before restart yes\n/);
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
