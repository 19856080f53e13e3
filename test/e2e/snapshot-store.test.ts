import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { S3SnapshotStore } from '../../packages/host-agent/src/snapshots';
import { COUNTER, createSandbox, exec, startTestPlatform, type TestPlatform } from '../fixture';
import { startS3, type TestS3 } from '../s3';
import { waitFor } from '../wait';

describe('snapshots in an S3-compatible store (real gVisor, s3rver on loopback)', () => {
  let s3: TestS3;
  let p: TestPlatform;
  const count = async (id: string) =>
    Number((await exec(p, id, { cmd: 'cat', args: ['/tmp/count'] })).stdout);

  before(async () => {
    s3 = await startS3();
    // No grace period: a delete collects the files at once (the grace is unit-tested).
    p = await startTestPlatform({
      snapshotStore: { kind: 's3', ...s3.config, collectGraceSeconds: 0 },
    });
  });
  after(async () => {
    await p?.stop();
    await s3?.stop();
  });

  it('a host without the snapshot locally fetches it before the restore; delete empties the bucket', async () => {
    const store = p.host.snapshotStore as S3SnapshotStore;
    const id = await createSandbox(p, { template: 'base', memory_mb: 128 });
    let child: string | undefined;
    try {
      await exec(p, id, { cmd: 'sh', args: ['-c', 'echo from-the-bucket > /root/f'] });
      await p.json(`/v1/sandboxes/${id}/processes`, {
        method: 'POST',
        json: { cmd: 'python3', args: ['-c', COUNTER] },
      });
      await waitFor(async () => (await count(id)) > 0, { what: 'the counter to start' });
      const snap = await p.json<{ id: string; size_bytes: number }>(
        `/v1/sandboxes/${id}/snapshots`,
        { method: 'POST' },
      );
      const keys = await store.keys();
      assert.ok(keys.includes(`warren/manifests/${snap.id}.json`));
      assert.ok(keys.some((k) => k.startsWith('warren/blobs/')));

      // This host forgets its copy: the restore has to come from the bucket.
      rmSync(join(p.home, 'snapshots', 'store'), { recursive: true, force: true });
      child = (
        await p.json<{ id: string }>('/v1/sandboxes', {
          method: 'POST',
          json: { from_snapshot: snap.id },
        })
      ).id;
      assert.equal(
        (await exec(p, child, { cmd: 'cat', args: ['/root/f'] })).stdout,
        'from-the-bucket\n',
      );
      const restored = child;
      const c1 = await count(restored);
      await waitFor(async () => (await count(restored)) > c1, {
        what: 'the captured process to count on in the restored copy',
      });

      assert.equal((await p.api(`/v1/snapshots/${snap.id}`, { method: 'DELETE' })).status, 204);
      assert.deepEqual(await store.keys(), []);
    } finally {
      if (child) await p.api(`/v1/sandboxes/${child}`, { method: 'DELETE' });
      await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    }
  });
});
